UNWIND $keys AS key
MATCH (:Entity {key: key})-[:MENTIONED_IN]->(c:Chunk)
RETURN key, count(c) AS chunks
