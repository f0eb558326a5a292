MATCH (c:Chunk {doc_id: $doc_id})<-[m:MENTIONED_IN]-(e:Entity)
RETURN e.key AS key, c.id AS chunk_id, m.count AS count
ORDER BY chunk_id, key
