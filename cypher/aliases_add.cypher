// Append aliases ({surface, normalized} pairs) to an entity. reduce() folds them into the two
// parallel lists and skips a normalized form the entity already has, or that came earlier in
// the same list: no alias is ever stored twice. Each normalized alias is an (:Alias) node
// that NAMES the entity (alias lookups use its index).
MATCH (e:Entity {key: $key})
WITH e,
     reduce(acc = {surfaces: e.aliases, keys: e.alias_keys}, alias IN $aliases |
       CASE WHEN alias.normalized IN acc.keys THEN acc
            ELSE {surfaces: acc.surfaces + [alias.surface], keys: acc.keys + [alias.normalized]}
       END) AS merged
SET e.aliases = merged.surfaces, e.alias_keys = merged.keys,
    e.alias_text = reduce(text = '', surface IN merged.surfaces | text + surface + '\n')
WITH e
UNWIND e.alias_keys AS alias_key
MERGE (a:Alias {key: alias_key})
  ON CREATE SET a.name = alias_key
MERGE (a)-[:NAMES]->(e)
