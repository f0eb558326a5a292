// Relation evidence given by the listed chunks, with its direction (for export). Index
// related_chunk_id; see relations_delete_by_chunk for why the IN-list form.
MATCH (a)-[r:RELATED]->(b)
WHERE r.chunk_id IN $chunk_ids
RETURN a.key AS source, b.key AS target, r.type AS type, r.chunk_id AS chunk_id, r.weight AS weight
ORDER BY chunk_id, source, target, type
