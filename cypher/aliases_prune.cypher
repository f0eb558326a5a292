// Alias nodes no entity claims any more.
UNWIND $alias_keys AS alias_key
MATCH (a:Alias {key: alias_key})
WHERE NOT (a)-[:NAMES]->()
DELETE a
