// A document's chunks (the graph keeps a preview, not the text), linked from the document.
MATCH (d:Document {id: $doc_id})
UNWIND $rows AS row
MERGE (c:Chunk {id: row.id})
SET c.doc_id = $doc_id, c.name = row.name, c.section_path = row.section_path,
    c.preview = row.preview, c.ordinal = row.ordinal
MERGE (d)-[:HAS_CHUNK]->(c)
