// Provenance of one merge: the dropped entity as it was, with its own mentions and relation
// evidence (JSON), so a split can put them back. `name` is the Browser caption.
CREATE (:EntityMerge {keep_key: $keep_key, drop_key: $drop_key, seq: $seq, entity: $entity,
                      mentions: $mentions, relations: $relations, name: $drop_key})
