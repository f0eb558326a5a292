// Relation evidence given by the listed chunks, with its direction (for export).
UNWIND $chunk_ids AS chunk_id
MATCH (a:Entity)-[r:RELATED {chunk_id: chunk_id}]->(b:Entity)
RETURN a.key AS source, b.key AS target, r.type AS type, chunk_id, r.weight AS weight
ORDER BY chunk_id, source, target, type
