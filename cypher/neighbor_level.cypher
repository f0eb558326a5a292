// One breadth-first level of neighbors() (semantics: kgrag/stores/graph_walk.py walk_levels).
// $frontier: [{key, score}] reached at the previous level; $reached: every key reached so far;
// $room: how many entities this level may add. Parallel RELATED edges between two entities
// (evidence from several chunks, either direction, any type) merge into one edge: weight =
// their sum, type = the heaviest type (ties: the smallest name). Each new entity keeps its
// best predecessor (highest score + edge weight; ties: smallest key); the level keeps the
// $room best entities (ties: smallest key). Only those rows leave the server.
UNWIND $frontier AS f
WITH f.key AS via, f.score AS via_score
MATCH (:Entity {key: via})-[r:RELATED]-(v:Entity)
WHERE NOT v.key IN $reached
WITH via, via_score, v, r.type AS type, sum(r.weight) AS type_weight
ORDER BY type_weight DESC, type
WITH via, via_score, v, sum(type_weight) AS weight, head(collect(type)) AS type
WITH v, via_score + weight AS score, via, weight, type
ORDER BY score DESC, via
WITH v, head(collect({score: score, via: via, weight: weight, type: type})) AS best
RETURN v.key AS key, best.score AS score, best.via AS via, best.weight AS weight, best.type AS type
ORDER BY score DESC, key
LIMIT $room
