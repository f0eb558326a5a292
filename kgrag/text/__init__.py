"""Text utilities shared by ingestion and retrieval: normalization and BM25 analysis."""
