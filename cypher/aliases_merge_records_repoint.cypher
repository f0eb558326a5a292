// The kept entity was renamed or merged on: its provenance follows it.
MATCH (m:EntityMerge {keep_key: $old})
SET m.keep_key = $new
