MATCH (a:Alias)-[:NAMES]->(e:Entity)
RETURN a.key AS alias, e.key AS key
ORDER BY alias, key
