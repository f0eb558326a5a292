// Relation evidence given by the listed chunks (index related_chunk_id).
UNWIND $chunk_ids AS chunk_id
MATCH ()-[r:RELATED {chunk_id: chunk_id}]->()
DELETE r
