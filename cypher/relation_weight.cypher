// Summed weight of the relations between two entities, either direction.
MATCH (:Entity {key: $a})-[r:RELATED]-(:Entity {key: $b})
RETURN coalesce(sum(r.weight), 0.0) AS weight
