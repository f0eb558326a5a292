// One entity with both alias lists (surface forms and their normalized keys, parallel).
MATCH (e:Entity {key: $key})
RETURN e.key AS key, e.name AS name, e.type AS type, e.curated AS curated, e.aliases AS aliases,
       e.alias_keys AS alias_keys
