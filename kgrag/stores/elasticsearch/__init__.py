"""The chunk index on Elasticsearch 8: ``chunks.ElasticsearchChunkIndex``."""
