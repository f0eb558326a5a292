// A new entity with no alias yet (aliases_add gives it its name and aliases).
CREATE (e:Entity {key: $key, name: $display_name, type: $type, curated: $curated,
                  aliases: [], alias_keys: [], alias_text: ''})
