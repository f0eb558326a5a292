"""Command line: ``kgrag ingest | delete | stats | ...``.

Exit codes: 0 success; 1 the command ran but something failed (e.g. some files could not be
ingested — the others were); 2 bad usage or configuration.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import click

from kgrag.config import Settings, load_settings

EXIT_PARTIAL = 1


def _offline_env() -> None:
    # Weights are never fetched at run time; fail fast instead of hanging on a hub request.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


class _Commands(click.Group):
    """Every command: a store failure is one line naming what failed (a damaged file and the
    command that rebuilds it), exit 1, never a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        import sqlite3

        from kgrag.errors import StoreDamaged, StoreError, damage_message

        try:
            return super().invoke(ctx)
        except StoreDamaged as exc:
            raise click.ClickException(str(exc)) from None
        except StoreError as exc:
            raise click.ClickException(f"a store failed: {exc}") from None
        except sqlite3.DatabaseError as exc:
            raise click.ClickException(damage_message("a store file", str(exc))) from None


@click.group(cls=_Commands)
@click.option("--data-dir", type=click.Path(path_type=Path), help="Knowledge base folder (default: $KGRAG_DATA_DIR or ./data).")
@click.option("-v", "--verbose", is_flag=True, help="Log debug messages.")
@click.pass_context
def main(ctx: click.Context, data_dir: Path | None, verbose: bool) -> None:
    """kgrag: a knowledge-graph-augmented RAG server."""
    _offline_env()
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    overrides = {"data_dir": data_dir} if data_dir else {}
    try:
        ctx.obj = load_settings(**overrides)
    except Exception as e:  # pydantic ValidationError, missing config file
        raise click.UsageError(f"invalid configuration: {e}") from e


def _components(settings: Settings):
    from kgrag.components import Components

    return Components(settings)


def _close_checked(comps) -> None:
    """Close the stores after a write and note their integrity check, so the server's next start
    is a restart (``Components.close(check_files=True)``); a failed check is printed."""
    for problem in comps.close(check_files=True):
        click.echo(f"warning: {problem}", err=True)


@main.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--glossary", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="CSV/YAML/line glossary of canonical names and aliases.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--no-progress", is_flag=True, help="Hide the progress bar (or, when output is not a terminal, the progress lines).")
@click.option("--root", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Folder the document ids are relative to (default: each folder or glob root given; a file "
                   "named alone and outside it is known by its absolute path).")
@click.pass_obj
def ingest(settings: Settings, paths: tuple[str, ...], glossary: Path | None, as_json: bool, no_progress: bool,
           root: Path | None) -> None:
    """Ingest files, directories or globs (txt md html pdf docx pptx xlsx csv eml ipynb jsonl code).

    A document's id is its path relative to the folder or glob root it was found through (or
    --root), the same from any working directory."""
    from kgrag.aliases.curation import keep_copy
    from kgrag.ingest.sources import Sources
    from kgrag.lexicon.glossary import load_glossary

    glossary_path = glossary or (Path(settings.extraction.glossary) if settings.extraction.glossary else None)
    entities = load_glossary(glossary_path) if glossary_path else None
    comps = _components(settings)
    try:
        progress = False if no_progress else (True if sys.stderr.isatty() else "lines")
        report = comps.ingest_job().run(paths, glossary_entities=entities, progress=progress, root=root)
        # What a rebuild of a lost store reads again (kgrag.repair): these paths, and the
        # glossary's curated names.
        Sources(settings.data_dir).record_ingest(paths, root)
        if entities:
            keep_copy(comps.graph, settings.data_dir)
    finally:
        _close_checked(comps)
    if as_json:
        click.echo(json.dumps(report.to_dict(), ensure_ascii=False, indent=2))
    else:
        _print_report(report)
    sys.exit(EXIT_PARTIAL if report.failed else 0)


def _print_report(report) -> None:
    d = report.to_dict()
    docs = d["documents"]
    click.echo(
        f"documents: {docs['new']} new, {docs['changed']} changed, {docs['unchanged']} unchanged, {docs['failed']} failed"
        + (f", {docs['rebuilt']} rebuilt (stored by another ingestion revision or settings)" if docs["rebuilt"] else "")
    )
    for f in report.failed:
        click.echo(f"  FAILED {f.path}: {f.reason}", err=True)
    if report.renamed:
        click.echo(f"{len(report.renamed)} documents stored under the id an older kgrag gave their file (relative to "
                   f"the working directory) now have their rooted id, e.g. {next(iter(report.renamed.items()))[0]} → "
                   f"{next(iter(report.renamed.items()))[1]}")
    t = d["totals"]
    click.echo(
        f"knowledge base: {t.get('documents', 0)} documents, {t.get('chunks', 0)} chunks "
        f"({t.get('indexed_chunks', 0)} searchable), {t.get('entities', 0)} entities, "
        f"{t.get('aliases', 0)} aliases, {t.get('mentions', 0)} mentions, {t.get('relations', 0)} relations"
    )
    if report.store_check.orphaned:
        click.echo(f"warning: {len(report.store_check.orphaned)} documents have chunks but no record in the graph "
                   "(a lost or replaced graph file): 'kgrag check --repair' rebuilds them from their sources", err=True)
    if report.cross_lingual_completed:
        click.echo(f"bilingual now: {report.cross_lingual_completed} stored English chunks got a multilingual vector")
    stages = ", ".join(f"{k} {v:.2f}s" for k, v in d["seconds"].items())
    click.echo(f"this run: {report.chunks_written} chunks written in {d['wall_seconds']:.2f}s ({d['chunks_per_second']:.1f} chunks/s); {stages}")


@main.command()
@click.argument("doc_id")
@click.pass_obj
def delete(settings: Settings, doc_id: str) -> None:
    """Delete one document: its chunks, mentions, relations only it evidenced, orphan entities."""
    comps = _components(settings)
    try:
        found = comps.ingest_job().delete(doc_id)
        stats = comps.graph.stats()
    finally:
        _close_checked(comps)
    if not found:
        click.echo(f"no document with id {doc_id!r}", err=True)
        sys.exit(EXIT_PARTIAL)
    click.echo(f"deleted {doc_id}; knowledge base now: " + ", ".join(f"{v} {k}" for k, v in stats.items()))


@main.command()
@click.option("--repair", is_flag=True, help="Set damaged files aside, finish or discard unfinished writes, and rebuild "
              "every document one store lacks from its source (uploads, posted texts, earlier ingest paths); the "
              "curated names and the audit log come back from their kept copy. What no source holds is removed "
              "only after the stores are backed up into DATA_DIR/backups/.")
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
@click.pass_obj
def check(settings: Settings, repair: bool, as_json: bool) -> None:
    """Compare the two stores (and each store's own soundness); exit 1 when anything is wrong
    (after --repair: when anything is still wrong)."""
    if repair:
        from kgrag.repair import repair as run_repair

        result = run_repair(settings).to_dict()
    else:
        result = _check(settings)
    if as_json:
        click.echo(json.dumps(result, ensure_ascii=False))
    else:
        click.echo(("repaired: " if repair else "") + ("the stores agree" if result["ok"] else "the stores do NOT agree"))
        for key, value in result.items():
            if key != "ok" and value not in ([], {}, None) and not (isinstance(value, dict) and not any(value.values())):
                click.echo(f"  {key}: {value}")
    if not result["ok"]:
        sys.exit(EXIT_PARTIAL)


def _check(settings: Settings) -> dict:
    """The stores' own soundness, then whether they agree (read-only)."""
    from kgrag.errors import StoreError
    from kgrag.stores import consistency

    comps = _components(settings)
    try:
        problems = [p for store in (comps.chunk_index, comps.graph) if isinstance(store, consistency.HealthCheck)
                    for p in store.problems()]
        if problems:
            return {"ok": False, "problems": problems}
        diff = consistency.check(comps.journal, comps.chunk_index, comps.graph)
        return {"ok": diff.ok, "problems": [] if diff.ok else [diff.describe()], **diff.to_dict()}
    except StoreError as exc:
        return {"ok": False, "problems": [str(exc)]}
    finally:
        comps.close()


@main.command()
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def stats(settings: Settings, as_json: bool) -> None:
    """Counts of documents, chunks, entities, aliases, mentions and relations."""
    from kgrag.reranker.status import reranker_status

    comps = _components(settings)
    try:
        s = {**comps.graph.stats(), "indexed_chunks": comps.chunk_index.count(searchable_only=True),
             "stale_documents": len(comps.stale_documents()), "reranker": reranker_status(settings)}
    finally:
        comps.close()
    if as_json:
        click.echo(json.dumps(s))
    else:
        for k, v in s.items():
            click.echo(f"{k:>15}: {v}")
        if s["stale_documents"]:
            click.echo(f"{s['stale_documents']} documents were built by another ingestion revision or settings: "
                       "ingest their sources again to rebuild them (docs/ingestion.md, 'Incremental ingestion')", err=True)



@main.command()
@click.option("--host", help="Interface to bind (default 127.0.0.1: only this machine).")
@click.option("--port", type=int, help="Port (default 8000).")
@click.option("--threads", type=click.IntRange(1, 256), help="Threads answering questions, sharing one model set "
              "(default: server.threads, 8).")
@click.pass_obj
def serve(settings: Settings, host: str | None, port: int | None, threads: int | None) -> None:
    """Serve the HTTP API and the web page (gunicorn, one process, threads)."""
    from kgrag.server import port_check

    server = settings.server.model_copy(update={k: v for k, v in (("host", host), ("port", port),
                                                                  ("threads", threads)) if v})
    settings = settings.model_copy(update={"server": server})
    if port_check.in_use(server.host, server.port):  # one line and exit 2, before anything else
        click.echo(port_check.in_use_message(server.host, server.port, "kgrag serve"), err=True)
        sys.exit(port_check.EXIT_USAGE)
    from kgrag.server.gunicorn_app import KgragGunicorn

    if server.host not in ("127.0.0.1", "localhost", "::1"):
        click.echo(f"warning: binding {server.host}: the API is reachable from other machines", err=True)
    click.echo(f"kgrag serving {settings.data_dir} on http://{server.host}:{server.port}/", err=True)
    KgragGunicorn(settings).run()


def _json_value(value: str) -> Any:
    """An option's JSON text, parsed, or exit 2 saying where it is not JSON."""
    try:
        return json.loads(value)
    except json.JSONDecodeError as e:
        raise click.BadParameter(f"not valid JSON: {e}") from e


def _search_filter(ctx: click.Context, param: click.Parameter, value: str | None):
    """``--filters`` JSON → a SearchFilter (parsed here, once), or exit 2 naming the bad key."""
    from kgrag.errors import InputError
    from kgrag.stores.filters import SearchFilter

    if value is None:
        return None
    try:
        return SearchFilter.parse(_json_value(value))
    except InputError as e:
        raise click.BadParameter(str(e)) from e


def _json_list(ctx: click.Context, param: click.Parameter, value: str | None):
    """``--history`` JSON → a list; its turns are checked with the rest of the request (``_request``)."""
    if value is None:
        return None
    parsed = _json_value(value)
    if not isinstance(parsed, list):
        raise click.BadParameter(f"expected a JSON list of turns, got {type(parsed).__name__}")
    return parsed


@main.command()
@click.argument("question")
@click.option("--top-k", type=click.IntRange(1, 100), help="How many chunks to retrieve.")
@click.option("--mode", "modes", multiple=True, type=click.Choice(["dense", "bm25", "graph"]), help="Retrieval paths (repeat; default all).")
@click.option("--filters", "filters", metavar="JSON", callback=_search_filter,
              help='Search filters, as in the HTTP API: \'{"doc_id": id or [ids], "source": path, "section_path_prefix": "Guide / 2."}\'.')
@click.option("--history", metavar="JSON", callback=_json_list,
              help='Earlier turns, oldest first, as in the HTTP API: \'[{"question": "...", "answer": "...", '
                   '"cited_chunk_ids": ["..."]}]\'; a follow-up ("and the next one?") is completed from them.')
@click.option("--conversation-id", metavar="ID",
              help="Instead of --history: a conversation kept in the data dir (or by the --server), as the web "
                   "page keeps one: its earlier turns are the history, and this turn is added to it.")
@click.option("--rerank/--no-rerank", default=None,
              help="Rerank with the configured cross-encoder (the API's \"rerank\"; default: when "
                   "retrieval.reranker_path names one; --rerank without one exits 2 naming it).")
@click.option("--iterate/--no-iterate", default=None,
              help="Retrieve-reason rounds after the first retrieval (default: retrieval.iterate).")
@click.option("--iterate-driver", type=click.Choice(["entities", "llm"]),
              help="Who plans the rounds (default: retrieval.iterate_driver; 'llm' needs llm.model).")
@click.option("--rewrite", "rewrites", multiple=True, type=click.Choice(["hyde", "multi_query", "decompose", "step_back"]),
              help="LLM query rewrites to run (repeat; default: those the settings switch on).")
@click.option("--recency-half-life", type=float, metavar="DAYS",
              help="Prefer newer documents: the boost halves every DAYS days (default: retrieval.recency_half_life_days).")
@click.option("--recency-weight", type=float, default=None,
              help="With --recency-half-life: the boost of a document dated today (default: retrieval.recency_weight).")
@click.option("--retrieve-only", is_flag=True, help="Print the ranked chunks, no answer.")
@click.option("--json", "as_json", is_flag=True, help="Print the full response as JSON.")
@click.option("--server", metavar="URL", envvar="KGRAG_SERVER_URL",
              help="Ask a running kgrag server (POST /v1/query) instead of loading the models here: "
                   "one request instead of seconds of model loading. Default: $KGRAG_SERVER_URL.")
@click.pass_obj
def query(settings: Settings, question: str, top_k: int | None, modes: tuple[str, ...], filters,
          history: list | None, conversation_id: str | None, rerank: bool | None, iterate: bool | None,
          iterate_driver: str | None, rewrites: tuple[str, ...], recency_half_life: float | None,
          recency_weight: float | None, retrieve_only: bool, as_json: bool, server: str | None) -> None:
    """Ask the knowledge base a question; prints the cited answer (or the ranked chunks). Answers
    as the server does: the same request model checks the options, the same seam answers."""
    options: dict = {"rerank": rerank, "iterate": iterate, "iterate_driver": iterate_driver,
                     "rewrite": list(rewrites) or None}
    if recency_weight is not None and recency_half_life is None:
        raise click.UsageError("--recency-weight needs --recency-half-life")
    if recency_half_life is not None:
        options["recency"] = {"half_life_days": recency_half_life,
                              **({"weight": recency_weight} if recency_weight is not None else {})}
    req = _request(question, top_k, modes, filters, history, conversation_id, options)
    body = _remote_query(server, req, retrieve_only) if server else _local_query(settings, req, retrieve_only)
    if as_json:
        click.echo(json.dumps(body, ensure_ascii=False, indent=2))
    elif "answer" in body:
        _print_answer(body)
    else:
        _print_hits(body)


def _request(question: str, top_k: int | None, modes: tuple[str, ...], filters, history: list | None,
             conversation_id: str | None, options: dict | None = None):
    """The options as the HTTP API's request, checked by the same model (question length,
    history turns, conversation id, not both): exit 2 naming each problem as the API's 400 does."""
    from pydantic import ValidationError

    from kgrag.server.errors import validation_message
    from kgrag.server.schemas import RetrieveRequest

    fields: dict = {"question": question, "top_k": top_k, "modes": list(modes) or None, "filters": filters,
                    **{k: v for k, v in (options or {}).items() if v is not None}}
    if history is not None:
        fields["history"] = history
    if conversation_id is not None:
        fields["conversation_id"] = conversation_id
    try:
        return RetrieveRequest.model_validate(fields)
    except ValidationError as e:  # named as the API's 400 names it
        raise click.UsageError(validation_message(e)) from e


def _local_query(settings: Settings, req, retrieve_only: bool) -> dict:
    """The response body ``/v1/query`` (or ``/v1/retrieve``) would send, computed here through the
    same seam (``kgrag.asking``); with a conversation id, the turn is kept in the data dir's
    conversation store as the server keeps it."""
    from kgrag.errors import StoreError
    from kgrag.request_options import UnavailableOption
    from kgrag.retrieve.pipeline import RetrievalError

    try:  # an option these settings cannot honour: exit 2 naming the setting, as the API's 400
        ask = req.checked_ask(settings)
    except UnavailableOption as e:
        raise click.UsageError(str(e)) from e
    comps = _components(settings)
    try:
        asking = comps.asking
        try:
            asked = asking.retrieve_only(ask) if retrieve_only else asking.ask(ask)
        except RetrievalError as e:
            raise click.UsageError(str(e)) from e
        except StoreError as e:  # a broken store: the knowledge base's fault, not the question's
            raise click.ClickException(f"a store failed: {e}") from e
        return asked.body
    finally:
        comps.close()


def _remote_query(server: str, req, retrieve_only: bool) -> dict:
    from kgrag.client import KgragClient, RemoteRefused
    from kgrag.errors import StoreError

    request = req.model_dump(mode="json", exclude_none=True, exclude_unset=True)
    if req.filters is not None:
        request["filters"] = req.filters.as_dict()
    try:
        return KgragClient(server).post("/v1/retrieve" if retrieve_only else "/v1/query", request)
    except RemoteRefused as e:
        raise click.UsageError(str(e)) from e
    except StoreError as e:  # RemoteError: the server failed or could not be reached
        raise click.ClickException(str(e)) from e


def _print_answer(body: dict) -> None:
    click.echo(body["answer"])
    for c in body["citations"]:
        page = f"page {c['page']}" if c.get("page") is not None else ""
        where = " · ".join(str(p) for p in (c.get("source"), c.get("section_path"), page) if p)
        click.echo(f"  [{c['n']}] {c['title']} — {where}")


def _print_hits(body: dict) -> None:
    for i, hit in enumerate(body["hits"], start=1):
        # by name: a server's JSON has its keys sorted, and both must print alike
        paths = " ".join(f"{k}#{v['rank']}" for k, v in sorted(hit["trace"]["paths"].items()))
        click.echo(f"{i:2d}. {hit['score']:.4f} {hit['chunk_id']}  [{paths}]  {hit['text'][:80]!r}")


from kgrag.transfer.cli import transfer as _transfer  # noqa: E402  (its own package: kgrag/transfer)

main.add_command(_transfer)

from kgrag.eval.cli import eval_command  # noqa: E402  (registered last: see kgrag/eval)

main.add_command(eval_command)

from kgrag.aliases.cli import aliases as _aliases  # noqa: E402  (its own module: kgrag/aliases)

main.add_command(_aliases)

from kgrag.feedback.cli import feedback as _feedback  # noqa: E402  (its own module: kgrag/feedback)

main.add_command(_feedback)

from kgrag.reranker.cli import reranker as _reranker  # noqa: E402  (its own package: kgrag/reranker)

main.add_command(_reranker)


if __name__ == "__main__":
    main()
