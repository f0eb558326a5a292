// Which of the given entity keys have no node.
UNWIND $keys AS key
OPTIONAL MATCH (e:Entity {key: key})
WITH key, e
WHERE e IS NULL
RETURN key
