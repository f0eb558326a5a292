// Mentions, one edge per (entity, chunk); repeats add up.
UNWIND $rows AS row
MATCH (e:Entity {key: row.key})
MATCH (c:Chunk {id: row.chunk_id})
MERGE (e)-[m:MENTIONED_IN]->(c)
  ON CREATE SET m.count = row.count
  ON MATCH SET m.count = m.count + row.count
