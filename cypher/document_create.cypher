// The document node; `name` is the caption Neo4j Browser shows.
CREATE (d:Document {id: $doc.id, name: $doc.name, source: $doc.source, title: $doc.title,
                    hash: $doc.hash, format: $doc.format, metadata: $doc.metadata})
