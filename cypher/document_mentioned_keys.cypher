// Entities a document's chunks mention: candidates for orphan removal once it is gone.
MATCH (c:Chunk {doc_id: $doc_id})<-[:MENTIONED_IN]-(e:Entity)
RETURN DISTINCT e.key AS key
