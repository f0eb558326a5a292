"""Elasticsearch-speaking servers for tests: osmem-server (in-process, CI), an Elasticsearch 8
container (testcontainers, where Docker answers) and a server named by ``KGRAG_TEST_ES_URL``.

Each ``*_client()`` returns ``(client, url, knn)`` for one server per test session, started on
first use, or calls ``pytest.skip`` with the reason it cannot. Tests make their own index on it
(``fresh_index_name``) and delete it afterwards, so they never see each other's chunks.
"""

from __future__ import annotations

import atexit
import os
import re
import uuid
from typing import Any

from tests.backend_cache import BackendCache, Unavailable

ES_IMAGE = "docker.elastic.co/elasticsearch/elasticsearch:8.15.3"

_backends: BackendCache[tuple[Any, str, bool]] = BackendCache()

_COMPAT = re.compile(r"application/vnd\.elasticsearch\+([a-z-]+); ?compatible-with=\d+")


def _plain_json_node_class():
    """A transport node that sends plain ``application/json`` where the 8.x client sends
    Elasticsearch's ``compatible-with=8`` media types: osmem-server, like OpenSearch, answers
    those with 406. Only the two headers change; requests and responses are otherwise untouched."""
    from elastic_transport import Urllib3HttpNode

    class PlainJsonNode(Urllib3HttpNode):
        def perform_request(self, method, target, body=None, headers=None, request_timeout=None):
            if headers is not None:
                headers = headers.copy()
                for name in ("accept", "content-type"):
                    if name in headers:
                        headers[name] = _COMPAT.sub(r"application/\1", headers[name])
            return super().perform_request(
                method, target, body=body, headers=headers, request_timeout=request_timeout
            )

    return PlainJsonNode


def fresh_index_name() -> str:
    return f"kgrag-test-{uuid.uuid4().hex[:12]}"


def osmem_client() -> tuple[Any, str, bool]:
    """osmem-server: BM25, bulk, filters, aggregations; no dense_vector and no kNN (knn=False)."""

    def start():
        from elasticsearch import Elasticsearch

        try:
            from osmem_server import OsmemServer
        except ImportError as e:
            raise Unavailable(f"osmem-server is not installed ({e}); pip install -e '.[test]'") from e
        # japanese=False: kuromoji is not used by kgrag and loading it costs start-up time.
        server = OsmemServer.start(japanese=False)
        atexit.register(server.close)
        client = Elasticsearch(server.url, node_class=_plain_json_node_class())
        return client, server.url, False

    return _backends.get("osmem", start)


def docker_client() -> tuple[Any, str, bool]:
    """Elasticsearch 8 in a container (security off, single node), where a Docker daemon answers."""

    def start():
        from elasticsearch import Elasticsearch

        try:
            import docker

            docker.from_env(timeout=5).ping()
        except Exception as e:  # no daemon, no socket, no permission: all mean "cannot run"
            raise Unavailable(
                f"no Docker daemon answers ({type(e).__name__}: {str(e)[:100]}); "
                "Elasticsearch 8 container tests skipped"
            ) from e
        try:
            from testcontainers.community.elasticsearch import ElasticSearchContainer
        except ImportError:  # testcontainers before the community split
            from testcontainers.elasticsearch import ElasticSearchContainer

        container = ElasticSearchContainer(ES_IMAGE, mem_limit="2G")
        container.with_env("ES_JAVA_OPTS", "-Xms512m -Xmx512m")
        container.start()
        atexit.register(container.stop)
        url = f"http://{container.get_container_host_ip()}:{container.get_exposed_port(container.port)}"
        return Elasticsearch(url, request_timeout=60), url, True

    return _backends.get("docker", start)


def env_client() -> tuple[Any, str, bool]:
    """The server named by KGRAG_TEST_ES_URL (user:password@ in the URL for basic auth)."""

    def start():
        from elasticsearch import Elasticsearch

        url = os.environ.get("KGRAG_TEST_ES_URL")
        if not url:
            raise Unavailable("KGRAG_TEST_ES_URL is not set; tests against an external Elasticsearch skipped")
        verify = os.environ.get("KGRAG_TEST_ES_VERIFY_CERTS", "1") != "0"
        return Elasticsearch(url, request_timeout=60, verify_certs=verify), url, True

    return _backends.get("env", start)


def drop_index(client: Any, index: str) -> None:
    client.options(ignore_status=404).indices.delete(index=index)
