// DETACH also drops the entities' RELATED evidence and NAMES edges.
UNWIND $keys AS key
MATCH (e:Entity {key: key})
DETACH DELETE e
