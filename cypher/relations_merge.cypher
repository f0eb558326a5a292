// Relation evidence, one RELATED edge per (source, target, type, evidencing chunk): deleting
// a document then removes exactly the evidence it gave. An edge's weight is the sum of its
// evidence; repeats inside one write add up.
UNWIND $rows AS row
MATCH (a:Entity {key: row.source})
MATCH (b:Entity {key: row.target})
MERGE (a)-[r:RELATED {type: row.type, chunk_id: row.chunk_id}]->(b)
  ON CREATE SET r.weight = row.weight
  ON MATCH SET r.weight = r.weight + row.weight
