"""The embedded stores: SQLite files under the data dir (``chunks.SqliteChunkIndex``,
``graph.SqliteGraphStore``), the entity graph in numpy arrays for traversal
(``compact_graph``)."""
