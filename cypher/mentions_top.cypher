// Each key's first $per_key mentions as [chunk_id, count] pairs (most mentions first, ties by
// chunk id), cut in the server and sent as one list per key: a hub entity is mentioned by
// thousands of chunks, and retrieval wants 50 of them.
UNWIND $keys AS key
MATCH (:Entity {key: key})-[m:MENTIONED_IN]->(c:Chunk)
WITH key, m.count AS count, c.id AS chunk_id
ORDER BY key, count DESC, chunk_id
RETURN key, collect([chunk_id, count])[..$per_key] AS top
