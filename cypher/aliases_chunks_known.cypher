// Which of the given chunk ids the graph holds.
UNWIND $chunk_ids AS chunk_id
MATCH (c:Chunk {id: chunk_id})
RETURN c.id AS id
