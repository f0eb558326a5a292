"""Servers for the adapters, shipped so tests, benchmarks and scripts share them: ``neo4j``
starts the real Neo4j 5 Community from Maven Central's jars (scripts/neo4j, the Neo4j tests);
``arcadedb`` starts ArcadeDB's Bolt server, a second Bolt implementation the contract suite
runs on. Nothing in kgrag's runtime imports this package."""
