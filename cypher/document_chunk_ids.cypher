MATCH (c:Chunk {doc_id: $doc_id})
RETURN c.id AS id
