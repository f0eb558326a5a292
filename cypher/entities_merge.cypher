// Create or merge entities, one row per key (the store folds repeats first). An existing
// entity keeps its name and type; curated sticks once set. Aliases arrive as
// {surface, normalized} pairs (the name first) and are appended unless the entity already
// has that normalized form: reduce() folds them into the two parallel lists, so neither a
// repeat inside one row nor one already stored becomes a duplicate.
// Each normalized alias is also an (:Alias) node, so alias lookups use an index.
UNWIND $rows AS row
MERGE (e:Entity {key: row.key})
  ON CREATE SET e.name = row.name, e.type = row.type, e.curated = row.curated,
                e.aliases = [], e.alias_keys = []
  ON MATCH SET e.curated = e.curated OR row.curated
WITH e, row,
     reduce(acc = {surfaces: e.aliases, forms: e.alias_keys}, alias IN row.aliases |
       CASE WHEN alias.normalized IN acc.forms THEN acc
            ELSE {surfaces: acc.surfaces + [alias.surface], forms: acc.forms + [alias.normalized]}
       END) AS merged
SET e.aliases = merged.surfaces, e.alias_keys = merged.forms,
    e.alias_text = reduce(text = '', surface IN merged.surfaces | text + surface + '\n')
WITH e
UNWIND e.alias_keys AS alias_key
MERGE (a:Alias {key: alias_key})
  ON CREATE SET a.name = alias_key
MERGE (a)-[:NAMES]->(e)
