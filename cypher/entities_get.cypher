UNWIND $keys AS key
MATCH (e:Entity {key: key})
RETURN e.key AS key, e.name AS name, e.type AS type, e.curated AS curated, e.aliases AS aliases
