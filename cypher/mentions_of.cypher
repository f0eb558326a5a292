UNWIND $keys AS key
MATCH (:Entity {key: key})-[m:MENTIONED_IN]->(c:Chunk)
RETURN key, c.id AS chunk_id, m.count AS count
ORDER BY key, count DESC, chunk_id
