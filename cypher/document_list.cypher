MATCH (d:Document)
RETURN d.id AS id, d.source AS source, d.title AS title, d.hash AS hash, d.format AS format,
       d.metadata AS metadata
ORDER BY id
