"""Test servers for the adapters, shipped so tests and benchmarks share them: ``arcadedb``
starts ArcadeDB's Bolt server as a stand-in for Neo4j. Nothing in kgrag's runtime imports
this package."""
