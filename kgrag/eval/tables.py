"""``kgrag eval report``: the published evaluation tables, made from saved runs.

A run is a ``kgrag eval --json`` file, or its summary (the same record without the per-query
details; ``--summaries DIR`` writes one). The tables say for every figure which set, which mode,
which commit and which date measured it, and put the mode the server answers with first, so a
documented figure is always one a command produced and can produce again.

A run written before runs recorded their commit and date shows "unknown" for them, unless
``--commit`` / ``--date`` say what they were (they never replace what a run records).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path
from typing import Any

from kgrag.errors import InputError
from kgrag.eval.negatives import NegativeSummary
from kgrag.eval.report import (
    AnswerSummary,
    ModeSummary,
    _pct,
    answers_table,
    breakdown,
    breakdown_table,
    modes_table,
    negatives_table,
)

SUMMARY_FORMAT = "kgrag-eval-summary/1"
UNKNOWN = "unknown"
# The generated part of a Markdown page lies between these two lines (``--update``).
BEGIN = "<!-- kgrag eval report: begin (generated; edit the runs, not this) -->"
END = "<!-- kgrag eval report: end -->"
_DETAIL = ("per_query", "titles")


class RunFileError(InputError):
    """A file that is not a readable ``kgrag eval --json`` run or summary."""


def load_run(path: Path, *, commit: str | None = None, date: str | None = None) -> dict[str, Any]:
    """A run's summary from a full report or a summary file; ``commit`` / ``date`` fill in what
    an older run did not record."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise RunFileError(f"{path}: not a readable JSON file ({e})") from e
    missing = [key for key in ("dataset", "queries", "ks", "modes") if not isinstance(data, dict) or key not in data]
    if missing:
        raise RunFileError(f"{path}: not a 'kgrag eval --json' report (no {', '.join(missing)})")
    return summarize(data, commit=commit, date=date)


def summarize(data: dict[str, Any], *, commit: str | None = None, date: str | None = None) -> dict[str, Any]:
    """The report without its per-query records, with what the tables read from them kept
    (recall per question kind). Idempotent: a summary summarizes to itself."""
    out = {key: value for key, value in data.items() if key not in _DETAIL}
    # Where this machine kept the files is no part of the result: the set's folder and file name are.
    for key in ("corpus", "queries_file"):
        if out.get(key):
            out[key] = "/".join(Path(str(out[key])).parts[-2:])
    if isinstance(out.get("ingest"), dict):
        out["ingest"] = {k: v for k, v in out["ingest"].items() if k != "kb_dir"}
    if "per_query" in data:
        out["breakdown"] = breakdown(data["per_query"], [m["mode"] for m in data["modes"]], data["ks"])
    out.setdefault("breakdown", None)
    out["format"] = SUMMARY_FORMAT
    recorded = dict(out.get("provenance") or {})
    if commit and not recorded.get("commit"):
        recorded["commit"] = commit
    if date and not recorded.get("date"):
        recorded["date"] = checked_date(date)
    out["provenance"] = recorded or None
    return out


def checked_date(value: str) -> str:
    """An ISO day or date-time, as given; anything else is refused with the value named."""
    try:
        (dt.date if len(value) == 10 else dt.datetime).fromisoformat(value)
    except ValueError:
        raise RunFileError(f"--date {value!r}: expected an ISO date such as 2025-11-11") from None
    return value


def write_summary(run: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(run, ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def served_mode(run: dict[str, Any]) -> str:
    """The mode the server answers with under the run's settings: every path, the reranker when
    one is configured, the LLM rewrites switched on (with an LLM), and iteration with its
    driver — written as ``kgrag eval --modes`` writes it."""
    from kgrag.eval.runner import ITERATE, REWRITE_MODES, parse_mode

    retrieval = run.get("retrieval_settings") or {}
    llm = _llm_model(run)
    parts = ["bm25", "dense", "graph"]
    if retrieval.get("reranker_path"):
        parts.append("rerank")
    if llm:
        parts += [name for name, field in REWRITE_MODES.items() if retrieval.get(field)]
    if retrieval.get("iterate", False):
        driver = retrieval.get("iterate_driver", "entities")
        parts.append(next(k for k, v in ITERATE.items() if v == (driver if llm else "entities")))
    return parse_mode("+".join(parts)).name


def _llm_model(run: dict[str, Any]) -> str | None:
    settings = (run.get("provenance") or {}).get("settings") or {}
    if "llm" in settings:
        return settings["llm"].get("model")
    return (run.get("answers") or {}).get("model")


def _modes(run: dict[str, Any]) -> list[ModeSummary]:
    """The run's modes, the served one first, the others in the order the run measured them."""
    names = {f.name for f in dataclasses.fields(ModeSummary)}
    modes = [ModeSummary(**{k: v for k, v in m.items() if k in names}) for m in run["modes"]]
    served = served_mode(run)
    return sorted(modes, key=lambda m: m.mode != served)


def _answers(run: dict[str, Any]) -> AnswerSummary | None:
    names = {f.name for f in dataclasses.fields(AnswerSummary)}
    return AnswerSummary(**{k: v for k, v in run["answers"].items() if k in names}) if run.get("answers") else None


def _negatives(run: dict[str, Any]) -> NegativeSummary | None:
    names = {f.name for f in dataclasses.fields(NegativeSummary)}
    return NegativeSummary(**{k: v for k, v in run["negatives"].items() if k in names}) if run.get("negatives") else None


def commit_of(run: dict[str, Any]) -> str:
    return str((run.get("provenance") or {}).get("commit") or UNKNOWN)


def day_of(run: dict[str, Any]) -> str:
    date = (run.get("provenance") or {}).get("date")
    return str(date)[:10] if date else UNKNOWN


def render(runs: list[dict[str, Any]], *, command: str = "kgrag eval report") -> str:
    """The overview (one row per run: its served mode, or its fullest one) and each run's
    tables, runs ordered by set, then date."""
    runs = sorted(runs, key=lambda r: (str(r["dataset"]), day_of(r), commit_of(r)))
    out = [f"Generated by `{command}`; every table names the run it comes from.", "",
           "| set | questions | mode | R@5 | AllGold@5 | MRR | contains gold | first sentence holds gold "
           "| citation precision | abstained: gold present / removed | commit | date |",
           "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    notes: list[str] = []
    for run in runs:
        out.append(_overview_row(run, notes))
    if notes:
        out += ["", *notes]
    for run in runs:
        out += ["", *_run_section(run)]
    return "\n".join(out) + "\n"


def _overview_row(run: dict[str, Any], notes: list[str]) -> str:
    modes = _modes(run)
    served = served_mode(run)
    answers, negatives = _answers(run), _negatives(run)
    first = modes[0]
    label = f"`{first.mode}`"
    if first.mode != served:
        label += " ¹"
        if not any(n.startswith("¹") for n in notes):
            notes.append(f"¹ The server's mode under the run's settings (e.g. `{served}`) was not measured in "
                         "that run; the row shows the first mode it measured.")
    a = answers if answers is not None and answers.mode == first.mode else None
    n = negatives if negatives is not None and negatives.mode == first.mode else None
    abstained = (f"{_pct(n.gate_present)} / {_pct(n.gate_removed)}" if n is not None
                 else f"{_pct(a.abstained)} / –" if a is not None else "–")
    cells = [f"{run['dataset']}", f"{run['queries']:,}", label, _pct(first.recall.get("5")), _pct(first.all_gold_at_5),
             _pct(first.mrr), _pct(a.contains) if a else "–", _pct(a.leads) if a else "–",
             _pct(a.citation_precision) if a else "–", abstained, f"`{commit_of(run)}`", day_of(run)]
    return "| " + " | ".join(cells) + " |"


def _run_section(run: dict[str, Any]) -> list[str]:
    modes = _modes(run)
    served = served_mode(run)
    provenance = run.get("provenance") or {}
    ingest = run.get("ingest") or {}
    totals = ingest.get("totals") or {}
    kb = ", ".join(f"{totals[key]:,} {key}" for key in ("chunks", "entities", "relations") if key in totals)
    measured = f"commit `{commit_of(run)}`, {day_of(run)}"
    if provenance.get("kgrag"):
        measured += f", kgrag {provenance['kgrag']}"
    if provenance.get("cpus"):
        measured += f", {provenance['cpus']} CPUs"
    questions = run["queries"]
    documents = ingest.get("documents")
    about = (f"{questions:,} question{'' if questions == 1 else 's'}, top {run.get('depth', '?')} passages each; "
             f"knowledge base of {documents:,} documents" if isinstance(documents, int) else
             f"{questions:,} question{'' if questions == 1 else 's'}, top {run.get('depth', '?')} passages each")
    served_note = (f"`{served}` is the mode the server answers with (first row)." if modes[0].mode == served
                   else f"The server's mode, `{served}`, was not measured in this run.")
    out = [f"### {run['dataset']}", "",
           about + (f" ({kb})" if kb else "") + f". Measured at {measured}. " + served_note, ""]
    out += modes_table(modes, run["ks"], label=lambda m: f"`{m.mode}`" + (" (served)" if m.mode == served else ""))
    answers, negatives = _answers(run), _negatives(run)
    if answers is not None:
        out += answers_table(answers)
    if negatives is not None:
        out += negatives_table(negatives)
    if run.get("breakdown"):
        out += breakdown_table(run["breakdown"], modes)
    return out


def replace_section(page: str, generated: str, *, name: str = "the page") -> str:
    """``page`` with the text between ``BEGIN`` and ``END`` replaced by ``generated``."""
    if page.count(BEGIN) != 1 or page.count(END) != 1 or page.index(BEGIN) > page.index(END):
        raise RunFileError(f"{name} needs one line {BEGIN!r} and, after it, one line {END!r}")
    head, rest = page.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{generated}{END}{tail}"


def section(page: str) -> str:
    """The generated text of a page that has one (what ``replace_section`` put there)."""
    return page.split(BEGIN, 1)[1].split(END, 1)[0].removeprefix("\n")

