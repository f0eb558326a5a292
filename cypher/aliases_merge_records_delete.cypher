// Provenance used by a split ($seqs), or all of an entity's when it is deleted ($seqs null).
MATCH (m:EntityMerge {keep_key: $key})
WHERE $seqs IS NULL OR m.seq IN $seqs
DELETE m
