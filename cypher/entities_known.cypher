UNWIND $keys AS key
MATCH (e:Entity {key: key})
RETURN e.key AS key
