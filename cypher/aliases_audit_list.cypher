MATCH (a:AuditEntry)
RETURN a.at AS at, a.who AS who, a.action AS action, a.target AS target, a.details AS details
ORDER BY a.seq DESC
LIMIT $limit
