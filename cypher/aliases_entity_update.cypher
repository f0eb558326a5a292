MATCH (e:Entity {key: $key})
SET e.name = $display_name, e.curated = $curated
