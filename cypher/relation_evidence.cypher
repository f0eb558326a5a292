// The evidence of the relations between two entities, either direction: one row per
// (type, evidencing chunk) with its summed weight, heaviest first (the graph explorer's edge).
MATCH (:Entity {key: $a})-[r:RELATED]-(:Entity {key: $b})
RETURN r.type AS type, r.chunk_id AS chunk_id, sum(r.weight) AS weight
ORDER BY weight DESC, chunk_id, type
LIMIT $limit
