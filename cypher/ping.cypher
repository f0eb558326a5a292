// Readiness: the server answers a read.
RETURN 1 AS ok
