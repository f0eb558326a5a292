// Set an entity's alias lists to exactly these (computed by the store after a removal, a
// split or a rename); aliases_unlink then drops the NAMES edges of the forms that left.
MATCH (e:Entity {key: $key})
SET e.aliases = $surfaces, e.alias_keys = $alias_keys,
    e.alias_text = reduce(text = '', surface IN $surfaces | text + surface + '\n')
