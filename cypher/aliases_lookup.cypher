UNWIND $aliases AS alias
MATCH (:Alias {key: alias})-[:NAMES]->(e:Entity)
RETURN alias, e.key AS key
ORDER BY alias, key
