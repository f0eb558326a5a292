// Non-curated entities among the candidates that no chunk mentions any more.
UNWIND $keys AS key
MATCH (e:Entity {key: key})
WHERE NOT e.curated AND NOT (e)-[:MENTIONED_IN]->()
RETURN e.key AS key, e.alias_keys AS alias_keys
