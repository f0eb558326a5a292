"""kgrag: knowledge-graph-augmented RAG."""
__version__ = "0.1.0"
