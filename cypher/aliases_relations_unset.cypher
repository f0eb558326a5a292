UNWIND $rows AS row
MATCH (:Entity {key: row.source})-[r:RELATED {type: row.type, chunk_id: row.chunk_id}]->(:Entity {key: row.target})
DELETE r
