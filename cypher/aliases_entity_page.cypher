MATCH (e:Entity)
RETURN e.key AS key, e.name AS name, e.type AS type, e.curated AS curated, e.aliases AS aliases
ORDER BY key
SKIP $offset
LIMIT $limit
