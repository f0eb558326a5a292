// Entities with an alias containing the normalized query: exact matches first, then
// prefixes, then any substring; within a rank, entities mentioned more often first.
MATCH (a:Alias)
WHERE a.key CONTAINS $query
MATCH (a)-[:NAMES]->(e:Entity)
WITH e, min(CASE WHEN a.key = $query THEN 0 WHEN a.key STARTS WITH $query THEN 1 ELSE 2 END) AS rank
OPTIONAL MATCH (e)-[m:MENTIONED_IN]->(:Chunk)
WITH e, rank, coalesce(sum(m.count), 0) AS mentions
RETURN e.key AS key
ORDER BY rank, mentions DESC, key
LIMIT $limit
