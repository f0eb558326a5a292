// The first of the given chunk ids that already belongs to some document.
UNWIND $chunk_ids AS chunk_id
MATCH (c:Chunk {id: chunk_id})
RETURN c.id AS id, c.doc_id AS doc_id
LIMIT 1
