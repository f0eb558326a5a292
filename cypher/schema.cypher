// Constraints and indexes of the kgrag graph (run once per store start; every statement is
// idempotent). A uniqueness constraint also gives the index that every lookup by key uses.
CREATE CONSTRAINT document_id IF NOT EXISTS FOR (d:Document) REQUIRE d.id IS UNIQUE;
CREATE CONSTRAINT chunk_id IF NOT EXISTS FOR (c:Chunk) REQUIRE c.id IS UNIQUE;
CREATE CONSTRAINT entity_key IF NOT EXISTS FOR (e:Entity) REQUIRE e.key IS UNIQUE;
CREATE CONSTRAINT alias_key IF NOT EXISTS FOR (a:Alias) REQUIRE a.key IS UNIQUE;
// A document's chunks are found by doc_id when it is replaced or deleted.
CREATE INDEX chunk_doc_id IF NOT EXISTS FOR (c:Chunk) ON (c.doc_id);
// Relation evidence is found by the chunk that gave it when its document goes.
CREATE INDEX related_chunk_id IF NOT EXISTS FOR ()-[r:RELATED]-() ON (r.chunk_id);
// The alias admin finds a kept entity's merge records, and lists the audit log by sequence.
CREATE INDEX entity_merge_keep_key IF NOT EXISTS FOR (m:EntityMerge) ON (m.keep_key);
CREATE INDEX audit_entry_seq IF NOT EXISTS FOR (a:AuditEntry) ON (a.seq);
