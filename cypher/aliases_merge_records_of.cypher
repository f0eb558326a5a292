MATCH (m:EntityMerge {keep_key: $key})
RETURN m.seq AS seq, m.drop_key AS drop_key, m.entity AS entity, m.mentions AS mentions,
       m.relations AS relations
ORDER BY seq
