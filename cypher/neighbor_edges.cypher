// One breadth-first level: every RELATED edge of the frontier entities, either direction,
// summed per (entity, neighbour, type). The store picks the best paths from these (graph_walk).
UNWIND $keys AS key
MATCH (u:Entity {key: key})-[r:RELATED]-(v:Entity)
RETURN key, v.key AS neighbor, r.type AS type, sum(r.weight) AS weight
