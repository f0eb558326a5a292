// A document's chunks as the graph keeps them (for export).
MATCH (c:Chunk {doc_id: $doc_id})
RETURN c.id AS id, c.section_path AS section_path, c.preview AS preview, c.ordinal AS ordinal
ORDER BY ordinal, id
