MATCH (a:Entity)-[r:RELATED]->(b:Entity {key: $key})
RETURN a.key AS source, b.key AS target, r.type AS type, r.chunk_id AS chunk_id, r.weight AS weight
