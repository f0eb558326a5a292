UNWIND $rows AS row
MATCH (:Entity {key: row.key})-[m:MENTIONED_IN]->(:Chunk {id: row.chunk_id})
DELETE m
