UNWIND $alias_keys AS alias_key
MATCH (:Alias {key: alias_key})-[n:NAMES]->(:Entity {key: $key})
DELETE n
