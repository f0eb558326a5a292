// A split out of merge order re-attributed evidence recorded in this merge record.
MATCH (m:EntityMerge {keep_key: $key, seq: $seq})
SET m.relations = $relations
