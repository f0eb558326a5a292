// Relation evidence given by the listed chunks (index related_chunk_id). The IN-list form,
// with unlabelled ends, is the one both Neo4j and ArcadeDB answer from the index; an UNWIND
// of the ids with the property in the pattern made ArcadeDB scan every RELATED edge per id.
MATCH ()-[r:RELATED]->()
WHERE r.chunk_id IN $chunk_ids
DELETE r
