// Relation evidence weights set to the given values (one RELATED edge per evidencing chunk).
UNWIND $rows AS row
MATCH (a:Entity {key: row.source})
MATCH (b:Entity {key: row.target})
MERGE (a)-[r:RELATED {type: row.type, chunk_id: row.chunk_id}]->(b)
SET r.weight = row.weight
