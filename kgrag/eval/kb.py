"""The knowledge base an evaluation runs on: built once per corpus and ingestion settings.

Ingesting a benchmark corpus takes minutes, tuning retrieval takes many runs, and retrieval
settings do not change what is stored. So a knowledge base records, in a manifest next to its
stores, the corpus content hash and the ingestion-relevant settings (chunking, embedder,
extraction, glossary, store kinds) it was built with; a later run with the same two reuses it,
any difference is refused with a message saying what differs (a silently stale knowledge base
would make every number after it wrong).

The manifest is written with status "ingesting" before ingestion and "complete" after it, so
an interrupted build resumes (ingestion skips documents already written, by content hash) and
a directory holding documents but no manifest is never taken for an evaluation base.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kgrag.atomic_files import written_whole
from kgrag.config import Settings
from kgrag.errors import StoreError
from kgrag.eval.data import Corpus, file_sha256
from kgrag.ingest.revision import INGEST_REVISION, stored_settings

MANIFEST = "eval-manifest.json"
MANIFEST_VERSION = 1
# Code that decides what gets stored. A change here may or may not matter (a docstring does
# not), so it only warns: rebuilding costs minutes, the warning says how.
_INGEST_CODE = ("ingest", "lexicon", "text", "models/embedder.py", "models/onnx_embedder.py", "models/ner.py")


class KnowledgeBaseError(StoreError, RuntimeError):
    """The knowledge base directory cannot be used for this evaluation as it is (a store in a
    state the run refuses). RuntimeError kept for callers that caught it as one."""


@dataclass
class IngestInfo:
    kb_dir: str
    reused: bool
    seconds: float | None  # this run's ingestion wall time; None when reused
    built_seconds: float | None  # wall time of the run(s) that built it
    documents: int
    totals: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def ingest_fingerprint(settings: Settings) -> dict[str, Any]:
    """What changes what ingestion stores (``kgrag.ingest.revision``), the store kinds and the
    glossary."""
    glossary = settings.extraction.glossary
    return {
        "revision": INGEST_REVISION,
        "chunk_store": settings.chunk_store,
        "graph_store": settings.graph_store,
        **stored_settings(settings),
        "glossary_sha256": file_sha256(Path(glossary)) if glossary else None,
    }


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def ingest_code_sha256() -> str:
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for part in _INGEST_CODE:
        target = root / part
        files = sorted(target.rglob("*.py")) if target.is_dir() else [target]
        for f in files:
            h.update(f.relative_to(root).as_posix().encode())
            h.update(f.read_bytes())
    return h.hexdigest()


def default_kb_dir(settings: Settings, corpus: Corpus) -> Path:
    """``<data dir>/eval/<set>-<corpus hash>-<settings hash>``: a settings change gets its own
    base instead of a refusal, and old bases stay for switching back."""
    return settings.data_dir / "eval" / f"{corpus.name}-{corpus.sha256[:10]}-{_digest(ingest_fingerprint(settings))[:8]}"


def require_embedded_stores(settings: Settings) -> None:
    """A base is a directory only with the SQLite stores; an Elasticsearch index or a Neo4j
    database would be shared with whatever else uses it, and 'fresh' could not be promised."""
    if settings.chunk_store != "sqlite" or settings.graph_store != "sqlite":
        raise KnowledgeBaseError(
            f"kgrag eval builds its knowledge base in the embedded SQLite stores; this configuration "
            f"uses chunk_store={settings.chunk_store!r}, graph_store={settings.graph_store!r}"
        )


def read_manifest(kb_dir: Path) -> dict[str, Any] | None:
    path = Path(kb_dir) / MANIFEST
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise KnowledgeBaseError(f"{path}: unreadable eval manifest ({e}); remove the directory or pass --reingest") from None


def _write_manifest(kb_dir: Path, manifest: dict[str, Any]) -> None:
    path = Path(kb_dir) / MANIFEST
    with written_whole(path) as partial:  # a reader never sees half a manifest
        partial.write_text(json.dumps(manifest, indent=2, ensure_ascii=False), encoding="utf-8")


def reset_kb_dir(kb_dir: Path, settings: Settings) -> None:
    """Delete a base so the next run rebuilds it. Only a directory that is an eval base (has a
    manifest) or lies under ``<data dir>/eval`` is deleted: never someone's own data dir."""
    kb_dir = Path(kb_dir)
    if not kb_dir.exists():
        return
    inside_default = (settings.data_dir / "eval").resolve() in kb_dir.resolve().parents
    if not (kb_dir / MANIFEST).is_file() and not inside_default:
        raise KnowledgeBaseError(f"{kb_dir} is not an eval knowledge base (no {MANIFEST}); not deleting it")
    shutil.rmtree(kb_dir)


def _differences(manifest: dict[str, Any], corpus: Corpus, fingerprint: dict[str, Any]) -> list[str]:
    out = []
    if manifest.get("corpus_sha256") != corpus.sha256:
        out.append(f"corpus content (built from {manifest.get('corpus_path')!r})")
    built = manifest.get("ingest_settings") or {}
    out.extend(f"setting {key}: built with {built.get(key)!r}, now {value!r}"
               for key, value in fingerprint.items() if built.get(key) != value)
    return out


def ensure_kb(components, corpus: Corpus, *, progress: bool = False) -> IngestInfo:
    """Reuse the base in ``components.settings.data_dir`` when its manifest matches; otherwise
    ingest the corpus into it (fresh, or resuming an interrupted build)."""
    settings = components.settings
    kb_dir = Path(settings.data_dir)
    fingerprint = ingest_fingerprint(settings)
    code = ingest_code_sha256()
    manifest = read_manifest(kb_dir)
    if manifest is not None:
        differ = _differences(manifest, corpus, fingerprint)
        if differ:
            raise KnowledgeBaseError(
                f"{kb_dir} was built for another corpus or settings ({'; '.join(differ)}); "
                "use another knowledge base directory or pass --reingest"
            )
        if manifest.get("status") == "complete":
            docs = len(components.graph.list_documents())
            warnings = []
            if manifest.get("ingest_code_sha256") != code:
                warnings.append(
                    "ingestion code (kgrag/ingest, kgrag/lexicon, kgrag/text, embedder, NER) changed since this knowledge "
                    "base was built; pass --reingest if the change affects what is stored"
                )
            if docs != len(corpus.titles):
                raise KnowledgeBaseError(
                    f"{kb_dir} holds {docs} documents, the corpus {len(corpus.titles)}: it was changed "
                    "after it was built; pass --reingest"
                )
            return IngestInfo(str(kb_dir), True, None, manifest.get("ingest_seconds"), docs,
                              manifest.get("totals", {}), warnings)
    elif components.graph.stats()["documents"]:
        raise KnowledgeBaseError(
            f"{kb_dir} already holds documents but no {MANIFEST}: it is not an eval knowledge base; "
            "choose an empty or new directory"
        )
    return _build(components, corpus, kb_dir, fingerprint, code, manifest, progress)


def _build(components, corpus, kb_dir, fingerprint, code, previous, progress) -> IngestInfo:
    from kgrag.lexicon.glossary import load_glossary

    settings = components.settings
    manifest = {
        "version": MANIFEST_VERSION,
        "status": "ingesting",
        "corpus_path": str(corpus.path),
        "corpus_sha256": corpus.sha256,
        "ingest_settings": fingerprint,
        "ingest_code_sha256": code,
        "ingest_seconds": (previous or {}).get("ingest_seconds") or 0.0,
    }
    _write_manifest(kb_dir, manifest)
    glossary = load_glossary(settings.extraction.glossary) if settings.extraction.glossary else None
    started = time.perf_counter()
    report = components.ingest_job().run([corpus.path], glossary_entities=glossary, progress=progress)
    seconds = round(time.perf_counter() - started, 2)
    if report.failed:
        shown = "; ".join(f"{f.path}: {f.reason}" for f in report.failed[:3])
        raise KnowledgeBaseError(f"ingesting {corpus.path} failed for {len(report.failed)} item(s): {shown}")
    stored = {d.id for d in components.graph.list_documents()}
    if stored != corpus.ids:
        extra, missing = len(stored - corpus.ids), len(corpus.ids - stored)
        raise KnowledgeBaseError(f"{kb_dir} after ingestion: {extra} documents not in the corpus, {missing} corpus ids missing")
    manifest.update(
        status="complete",
        ingest_seconds=round(manifest["ingest_seconds"] + seconds, 2),
        totals=report.totals,
        stage_seconds=report.to_dict()["seconds"],
        built_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    )
    _write_manifest(kb_dir, manifest)
    return IngestInfo(str(kb_dir), False, seconds, manifest["ingest_seconds"], len(stored), report.totals)


def served_knowledge_base(components) -> tuple[Corpus, IngestInfo]:
    """Evaluate on the knowledge base as it is (a team's own, e.g. with questions exported from
    feedback): nothing is ingested or checked against a manifest; its documents are the corpus
    the gold ids must name. Works on every store kind, since nothing is built."""
    docs = components.graph.list_documents()
    if not docs:
        raise KnowledgeBaseError(f"{components.settings.data_dir} holds no documents: ingest some, or pass --corpus")
    stats = {**components.graph.stats(), "indexed_chunks": components.chunk_index.count(searchable_only=True)}
    corpus = Corpus(Path(components.settings.data_dir), "", {d.id: d.title for d in docs})
    info = IngestInfo(str(components.settings.data_dir), True, None, None, len(docs), stats)
    return corpus, info
