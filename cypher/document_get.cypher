// One document by id (no text: the graph does not keep it).
MATCH (d:Document {id: $doc_id})
RETURN d.id AS id, d.source AS source, d.title AS title, d.hash AS hash, d.format AS format,
       d.metadata AS metadata
