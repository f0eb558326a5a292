// Every document's id and recorded hash (the write journal's recovery compares them).
MATCH (d:Document)
RETURN d.id AS id, d.hash AS hash
