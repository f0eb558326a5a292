"""Benchmark files in the ``shared/bench`` layout.

``corpus.jsonl``: ``{"id", "title", "text"}`` a line — read with the very loader ingestion uses,
so the ids here are the document ids the knowledge base holds (a hit's ``chunk.doc_id``).
``queries.jsonl``: ``{"id", "question", "answers": [...], "gold_ids": [...], "meta": {...}}``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgrag.errors import InputError
from kgrag.ingest.loaders import LoadError
from kgrag.ingest.loaders.records import load_jsonl
from kgrag.types import Turn


class EvalDataError(InputError):
    """A benchmark file that cannot be evaluated as given; the message names file and line."""


@dataclass(frozen=True)
class EvalQuery:
    id: str
    question: str
    gold_ids: tuple[str, ...]
    answers: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    # The conversation before the question (``meta.context``), oldest turn first.
    history: tuple[Turn, ...] = ()
    # The day the question is asked (``meta.reference_time``, ISO, e.g. "2025-11-11T11:11:11"):
    # answers to "the current quarter" count from it, not from the day the evaluation runs.
    day: dt.date | None = None


@dataclass(frozen=True)
class Corpus:
    path: Path
    sha256: str
    titles: dict[str, str]  # document id -> title, in file order

    @property
    def ids(self) -> set[str]:
        return set(self.titles)

    @property
    def name(self) -> str:
        return dataset_name(self.path)


def dataset_name(path: Path) -> str:
    """``.../hotpotqa_dev500/corpus.jsonl`` -> ``hotpotqa_dev500``; else the file stem."""
    path = Path(path)
    return path.parent.name if path.stem in ("corpus", "queries") and path.parent.name else path.stem


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with Path(path).open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def load_corpus(path: Path) -> Corpus:
    path = Path(path)
    try:
        docs = load_jsonl(path)
    except LoadError as e:
        raise EvalDataError(f"corpus {e}") from None
    except OSError as e:
        raise EvalDataError(f"corpus {path}: {e.strerror or e}") from None
    return Corpus(path, file_sha256(path), {d.id: d.title for d in docs})


def _id(value: Any, where: str, what: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        raise EvalDataError(f"{where}: {what} must be a non-empty string or an integer, got {value!r}")
    return str(value)


def _query(record: Any, where: str, line_no: int) -> EvalQuery:
    if not isinstance(record, dict):
        raise EvalDataError(f"{where}: expected a JSON object, got {type(record).__name__}")
    question = record.get("question")
    if not isinstance(question, str) or not question.strip():
        raise EvalDataError(f"{where}: field 'question' is missing or empty")
    gold = record.get("gold_ids")
    if not isinstance(gold, list) or not gold:
        raise EvalDataError(f"{where}: field 'gold_ids' must be a non-empty list of corpus ids")
    answers = record.get("answers", [])
    if isinstance(answers, str):
        answers = [answers]
    if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
        raise EvalDataError(f"{where}: field 'answers' must be a list of strings")
    meta = record.get("meta") or {}
    qid = _id(record["id"], where, "field 'id'") if record.get("id") not in (None, "") else f"line{line_no}"
    gold_ids = tuple(dict.fromkeys(_id(g, where, "each gold id") for g in gold))
    meta = meta if isinstance(meta, dict) else {"meta": meta}
    return EvalQuery(qid, question.strip(), gold_ids, tuple(answers), meta, _history(meta.get("context"), where),
                     _day(meta.get("reference_time"), where))


def _day(value: Any, where: str) -> dt.date | None:
    """``meta.reference_time`` → its date; it may go on after the date ("…T11:11:11 (Tuesday)")."""
    if value is None or value == "":
        return None
    try:
        return dt.date.fromisoformat(str(value)[:10])
    except ValueError as e:
        raise EvalDataError(f"{where}: meta.reference_time must start with a date (YYYY-MM-DD), got {value!r}") from e


def _history(context: Any, where: str) -> tuple[Turn, ...]:
    """``meta.context``: the previous question as a string, or a list of earlier turns, each a
    question string or ``{"question", "answer"?, "cited_chunk_ids"?}`` (as the HTTP API's
    ``history``: the chunks a turn's answer cited, which "and the next one?" starts from)."""
    if context is None or context == "":
        return ()
    items = context if isinstance(context, list) else [context]
    turns = []
    for item in items:
        if isinstance(item, str) and item.strip():
            turns.append(Turn(item.strip()))
        elif isinstance(item, dict) and isinstance(item.get("question"), str) and item["question"].strip():
            answer = item.get("answer")
            cited = item.get("cited_chunk_ids", [])
            if not isinstance(cited, list) or not all(isinstance(c, str) and c for c in cited):
                raise EvalDataError(f"{where}: meta.context cited_chunk_ids must be a list of chunk ids, "
                                    f"got {cited!r}"[:300])
            turns.append(Turn(item["question"].strip(), answer if isinstance(answer, str) else None, tuple(cited)))
        else:
            raise EvalDataError(f"{where}: meta.context must be a question string or a list of questions "
                                f"or {{question, answer, cited_chunk_ids}} objects, got {item!r}"[:300])
    return tuple(turns)


def load_queries(path: Path, limit: int | None = None) -> list[EvalQuery]:
    """The first ``limit`` queries (all when None), in file order."""
    path = Path(path)
    if limit is not None and limit < 1:
        raise EvalDataError(f"limit must be at least 1, got {limit}")
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except OSError as e:
        raise EvalDataError(f"queries {path}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise EvalDataError(f"queries {path}: not UTF-8 ({e.reason})") from None
    out: list[EvalQuery] = []
    seen: dict[str, int] = {}
    for line_no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"queries {path} line {line_no}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise EvalDataError(f"{where}: not valid JSON ({e.msg} at column {e.colno})") from None
        q = _query(record, where, line_no)
        if q.id in seen:
            raise EvalDataError(f"{where}: query id {q.id!r} already used on line {seen[q.id]}")
        seen[q.id] = line_no
        out.append(q)
        if limit is not None and len(out) == limit:
            break
    if not out:
        raise EvalDataError(f"queries {path}: no queries")
    return out


def check_gold_in_corpus(queries: list[EvalQuery], corpus: Corpus) -> None:
    """Gold ids missing from the corpus would cap recall silently: refuse them up front."""
    ids = corpus.ids
    missing = [(q.id, g) for q in queries for g in q.gold_ids if g not in ids]
    if missing:
        shown = ", ".join(f"{g!r} (query {qid!r})" for qid, g in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise EvalDataError(
            f"{len(missing)} gold id(s) are not ids of corpus {corpus.path}: {shown}{more}"
        )


def check_gold_outside_corpus(queries: list[EvalQuery], corpus: Corpus) -> None:
    """Off-topic questions (another set's, asked of this knowledge base) must not have their gold
    passages here: a question this corpus answers is no off-topic question."""
    ids = corpus.ids
    inside = [(q.id, g) for q in queries for g in q.gold_ids if g in ids]
    if inside:
        shown = ", ".join(f"{g!r} (query {qid!r})" for qid, g in inside[:5])
        raise EvalDataError(
            f"{len(inside)} gold id(s) of these off-topic questions are documents of corpus {corpus.path}: {shown}; "
            "off-topic questions must come from another set"
        )
