"""The graph store on Neo4j 5 (or a Bolt server compatible with it): ``graph.Neo4jGraphStore``.
Every statement it runs is a file of the repository's ``cypher/`` folder (``cypher_loader``)."""
