// Full-text (Lucene) index over entity names and aliases, for people exploring the graph in
// Neo4j Browser (see browser-guide.cypher):
//   CALL db.index.fulltext.queryNodes('entity_names', 'lowest~') YIELD node, score
// alias_text holds every alias surface form, one per line (a string property indexes on
// every Neo4j 5 release; list properties do not).
CREATE FULLTEXT INDEX entity_names IF NOT EXISTS FOR (e:Entity) ON EACH [e.name, e.alias_text];
