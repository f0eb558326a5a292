UNWIND $chunk_ids AS chunk_id
MATCH (:Chunk {id: chunk_id})<-[m:MENTIONED_IN]-(e:Entity)
RETURN chunk_id, e.key AS key
ORDER BY chunk_id, m.count DESC, key
