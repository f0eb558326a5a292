// An entity was renamed, or restored by a split under another key: its provenance follows it.
MATCH (m:EntityMerge {keep_key: $old})
SET m.keep_key = $new
