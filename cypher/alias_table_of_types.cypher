// The alias table restricted to entities of the given types (the described entities' index:
// headings, defined terms, identifiers, table entries).
MATCH (a:Alias)-[:NAMES]->(e:Entity)
WHERE e.type IN $types
RETURN a.key AS alias, e.key AS key
ORDER BY alias, key
