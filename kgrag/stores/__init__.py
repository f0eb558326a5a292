"""Storage: the ports (``base``), the store kinds and their builders (``factory``), rules every
graph store follows (``graph_rules``, ``graph_walk``, ``merge_split``: no engine in them), and
one package per engine — ``sqlite`` (embedded), ``neo4j``, ``elasticsearch`` — none of which
imports another (``tests/test_store_layout.py`` checks it).
"""
