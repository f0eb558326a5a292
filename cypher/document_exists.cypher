// Whether a document is known: its node, or chunks left by an interrupted write.
OPTIONAL MATCH (d:Document {id: $doc_id})
OPTIONAL MATCH (c:Chunk {doc_id: $doc_id})
RETURN count(d) + count(c) > 0 AS known
