// Mention counts set to the given values (the store computed them: sums, maxima, restores).
UNWIND $rows AS row
MATCH (e:Entity {key: row.key})
MATCH (c:Chunk {id: row.chunk_id})
MERGE (e)-[m:MENTIONED_IN]->(c)
SET m.count = row.count
