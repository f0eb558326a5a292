// Counts: relations are distinct (source, target, type) edges, not evidence rows.
CALL () { MATCH (d:Document) RETURN count(d) AS documents }
CALL () { MATCH (c:Chunk) RETURN count(c) AS chunks }
CALL () { MATCH (e:Entity) RETURN count(e) AS entities }
CALL () { MATCH (:Alias)-[n:NAMES]->(:Entity) RETURN count(n) AS aliases }
CALL () { MATCH (:Entity)-[m:MENTIONED_IN]->(:Chunk) RETURN count(m) AS mentions }
CALL () { MATCH (a:Entity)-[r:RELATED]->(b:Entity) RETURN count(DISTINCT [a.key, b.key, r.type]) AS relations }
RETURN documents, chunks, entities, aliases, mentions, relations
