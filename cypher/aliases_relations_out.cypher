// Relation evidence leaving an entity (aliases_relations_in: arriving), one row per chunk.
MATCH (a:Entity {key: $key})-[r:RELATED]->(b:Entity)
RETURN a.key AS source, b.key AS target, r.type AS type, r.chunk_id AS chunk_id, r.weight AS weight
