// ArcadeDB dialect: no statement. ArcadeDB creates full-text indexes only in SQL
// (CREATE INDEX ... FULL_TEXT), and its Bolt server runs Cypher only, so the store cannot
// create this index over Bolt. Nothing in kgrag queries it (find_entities matches substrings
// of normalized aliases, which a token index cannot answer); only the Browser guide does.
