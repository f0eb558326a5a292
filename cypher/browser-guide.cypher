// kgrag — saved queries for Neo4j Browser
//
// Paste one query at a time (or add them to Favorites). Set the parameters first, e.g.:
//   :param key => 'lca'
//   :param alias => 'lowest common ancestor'
//   :param doc_id => 'notes/algorithms.md'
//   :param limit => 25
// Entity keys and aliases are normalized names (lower case, punctuation folded); find one
// with query 1 or 2. Captions: every node has a `name` property (Browser shows it; pick
// `name` in the caption menu if it shows another one).

// 1. An entity with its aliases (surface forms, and the normalized keys that look it up)
MATCH (e:Entity {key: $key})
OPTIONAL MATCH (a:Alias)-[:NAMES]->(e)
RETURN e.key AS key, e.name AS name, e.type AS type, e.curated AS curated,
       e.aliases AS aliases, collect(a.key) AS alias_keys;

// 2. Which entities an alias names (more than one: the alias is ambiguous)
MATCH (a:Alias {key: $alias})-[:NAMES]->(e:Entity)
RETURN a, e;

// 3. Its neighbourhood within two hops, as a picture (RELATED edges: one per evidencing
//    chunk; weight = how strongly that chunk links the pair)
MATCH p = (e:Entity {key: $key})-[:RELATED*1..2]-(:Entity)
RETURN p
LIMIT $limit;

// 4. Its direct neighbours as a table: summed weight and relation types per neighbour
MATCH (e:Entity {key: $key})-[r:RELATED]-(n:Entity)
WITH e, n, sum(r.weight) AS weight, collect(DISTINCT r.type) AS types
RETURN n.key AS neighbour, n.name AS name, 1 AS hops, types, weight
ORDER BY weight DESC
LIMIT $limit;

// 5. The chunks that mention it, most mentions first, with their document
MATCH (e:Entity {key: $key})-[m:MENTIONED_IN]->(c:Chunk)<-[:HAS_CHUNK]-(d:Document)
RETURN d.title AS document, c.id AS chunk, c.section_path AS section, m.count AS mentions,
       c.preview AS preview
ORDER BY mentions DESC, chunk
LIMIT $limit;

// 6. The most connected entities (distinct neighbours), with how many chunks mention them
MATCH (e:Entity)-[:RELATED]-(n:Entity)
WITH e, count(DISTINCT n) AS neighbours
OPTIONAL MATCH (e)-[:MENTIONED_IN]->(c:Chunk)
RETURN e.key AS key, e.name AS name, neighbours, count(c) AS chunks
ORDER BY neighbours DESC, key
LIMIT $limit;

// 7. Documents and how many chunks each has
MATCH (d:Document)
OPTIONAL MATCH (d)-[:HAS_CHUNK]->(c:Chunk)
RETURN d.id AS id, d.title AS title, d.source AS source, d.format AS format, count(c) AS chunks
ORDER BY id
LIMIT $limit;

// 8. One document with its chunks and the entities they mention, as a picture
MATCH (d:Document {id: $doc_id})-[h:HAS_CHUNK]->(c:Chunk)
OPTIONAL MATCH (e:Entity)-[m:MENTIONED_IN]->(c)
RETURN d, h, c, m, e
LIMIT 300;

// 9. Full-text search over names and aliases (Neo4j; fuzzy with ~). ArcadeDB does not
//    have this index over Bolt (see cypher/arcadedb/schema_fulltext.cypher).
CALL db.index.fulltext.queryNodes('entity_names', $alias) YIELD node, score
RETURN node.key AS key, node.name AS name, node.aliases AS aliases, score
LIMIT $limit;
