// A document node and its chunks; DETACH also drops HAS_CHUNK and MENTIONED_IN.
OPTIONAL MATCH (c:Chunk {doc_id: $doc_id})
DETACH DELETE c
WITH count(*) AS ignored
OPTIONAL MATCH (d:Document {id: $doc_id})
DETACH DELETE d
