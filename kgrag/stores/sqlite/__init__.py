"""The embedded stores: SQLite files under the data dir (``chunks.SqliteChunkIndex``,
``graph.SqliteGraphStore``), networkx for graph traversal."""
