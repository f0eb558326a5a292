// Every document with the ids of its chunks (an empty list for a document without any), and
// chunks whose document node is missing, under their doc_id: the consistency check's view.
MATCH (c:Chunk)
RETURN c.doc_id AS doc_id, collect(c.id) AS chunk_ids
