"""``kgrag eval``: ingest (or reuse) a benchmark corpus, score the retrieval ablation, report.

Heavy imports happen inside the command so ``kgrag --help`` does not pay for them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)
_OUT = click.Path(dir_okay=False, writable=True, path_type=Path)


def _ints(value: str) -> list[int]:
    try:
        ks = [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers, got {value!r}") from None
    if not ks or min(ks) < 1:
        raise click.BadParameter(f"expected positive integers, got {value!r}")
    return ks


@click.group("eval", invoke_without_command=True)
@click.option("--corpus", type=_FILE, help="Passages, one {id, title, text} JSON object a line. Without it: the "
              "knowledge base in --data-dir as it is (gold ids are its document ids, e.g. 'kgrag feedback export').")
@click.option("--queries", type=_FILE, help="Questions, one {id, question, answers, gold_ids} a line.")
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N queries.")
@click.option("--modes", help="Comma-separated ablation rows, paths joined by '+' (dense, bm25, graph; '+rerank', "
              "'+iter'), or 'served': what /v1/query runs with these settings (bm25+dense+graph+iter by default). "
              "Default: bm25,dense,graph,bm25+dense,bm25+dense+graph, + bm25+dense+graph+rerank with a reranker, + the "
              "served mode when retrieval.iterate is on (the default).")
@click.option("--ks", default="1,2,5,10", show_default=True, help="Recall cut-offs.")
@click.option("--top-k", type=click.IntRange(min=1), help="Passages ranked per query (default: max(largest k, 10)).")
@click.option("--answers/--no-answers", default=None, help="Score generated answers (default: when llm.model is set; "
              "--answers without an LLM scores the extractive answerer).")
@click.option("--answer-mode", help="Mode whose hits answers are generated from (default: the last mode).")
@click.option("--history/--no-history", default=True, show_default=True,
              help="Ask each question after the conversation in its meta.context (follow-ups scored as threads).")
@click.option("--negatives", is_flag=True, help="Negative rejection: also judge every question with its gold passages "
              "taken out of its hits; report abstention with the gold present (want low) and removed (want high).")
@click.option("--off-topic", is_flag=True, help="The questions are another set's, which this corpus does not answer "
              "(their gold ids name none of its documents): report only how many the gate and the answer decline.")
@click.option("--json", "json_out", type=_OUT, help="Write the full report with per-query results here.")
@click.option("--markdown", "markdown_out", type=_OUT, help="Write the Markdown tables here too.")
@click.option("--chart", "chart_out", type=_OUT, help="Write a PNG bar chart of recall per mode here.")
@click.option("--kb-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Knowledge base directory (default: <data dir>/eval/<set>-<corpus hash>-<ingest settings hash>).")
@click.option("--reingest", is_flag=True, help="Delete the evaluation knowledge base first and ingest again.")
@click.option("--no-progress", is_flag=True, help="Hide progress bars.")
@click.option("--compare", nargs=2, type=_FILE, metavar="A.toml B.toml",
              help="A/B: run both settings files on the same questions and report B − A per metric with a "
                   "paired bootstrap confidence interval (default mode: served).")
@click.option("--resamples", type=click.IntRange(min=100), default=2000, show_default=True,
              help="Bootstrap resamples for --compare.")
@click.pass_context
def eval_command(ctx: click.Context, corpus: Path | None, queries: Path | None, limit, modes, ks, top_k, answers, answer_mode,
                 history, negatives, off_topic, json_out, markdown_out, chart_out, kb_dir, reingest, no_progress, compare, resamples) -> None:
    """Score retrieval (and answers) on a benchmark set; prints a Markdown ablation table.

    `kgrag eval report RUN.json ...` makes the published tables from saved runs."""
    if ctx.invoked_subcommand is not None:
        return
    if queries is None:
        raise click.UsageError("Missing option '--queries'.")
    settings = ctx.obj
    options = dict(modes=modes, limit=limit, ks=_ints(ks), top_k=top_k, answers=answers, answer_mode=answer_mode,
                   history=history, negatives=negatives, off_topic=off_topic, progress=not no_progress and sys.stderr.isatty())
    if compare:
        _compare(settings, compare, corpus, queries, kb_dir, reingest, resamples, json_out, markdown_out, options)
        return
    report = _run(settings, corpus, queries, kb_dir, reingest, options)
    text = report.markdown()
    click.echo(text)
    for warning in report.ingest.warnings:
        click.echo(f"warning: {warning}", err=True)
    if json_out:
        report.write_json(json_out)
    if markdown_out:
        markdown_out.write_text(text, encoding="utf-8")
    if chart_out:
        report.write_chart(chart_out)
    for label, path in (("JSON", json_out), ("Markdown", markdown_out), ("chart", chart_out)):
        if path:
            click.echo(f"wrote {label} to {path}", err=True)


def _run(settings, corpus: Path | None, queries: Path, kb_dir: Path | None, reingest: bool, options: dict):
    """One evaluation: on a corpus (its own knowledge base, built or reused) or, without one,
    on the knowledge base in the data dir as it is."""
    from kgrag.components import Components
    from kgrag.eval.data import EvalDataError, load_corpus
    from kgrag.eval.kb import KnowledgeBaseError, default_kb_dir, require_embedded_stores, reset_kb_dir
    from kgrag.eval.runner import EvalConfigError, run_eval

    if corpus is not None:
        try:
            require_embedded_stores(settings)
            kb_dir = kb_dir or default_kb_dir(settings, load_corpus(corpus))
            if reingest:
                reset_kb_dir(kb_dir, settings)
        except (EvalDataError, KnowledgeBaseError) as e:
            raise click.UsageError(str(e)) from e
    elif reingest:
        raise click.UsageError("--reingest needs --corpus (without it the knowledge base is used as it is)")
    comps = Components(settings.model_copy(update={"data_dir": kb_dir}) if kb_dir else settings)
    try:
        return run_eval(comps, corpus, queries, **options)
    except (EvalDataError, EvalConfigError) as e:
        raise click.UsageError(str(e)) from e
    except KnowledgeBaseError as e:
        raise click.ClickException(str(e)) from e
    finally:
        comps.close()


def _compare(settings, files, corpus, queries, kb_dir, reingest, resamples, json_out, markdown_out, options) -> None:
    import json

    from kgrag.config import settings_from_file
    from kgrag.eval.compare import CompareError, compare, render_markdown
    from kgrag.eval.runner import SERVED

    reports = []
    for path in files:
        try:  # the data dir stays the one given on the command line: both runs share the questions' base
            configured = settings_from_file(path, data_dir=settings.data_dir)
        except Exception as e:  # pydantic ValidationError, TOML syntax
            raise click.UsageError(f"settings file {path}: {e}") from e
        click.echo(f"running {path} ...", err=True)
        mode_options = {**options, "modes": options["modes"] or SERVED}
        reports.append(_run(configured, corpus, queries, kb_dir, reingest, mode_options))
        reingest = False  # one rebuild is enough when both share a knowledge base
    a, b = reports
    shared = [m.mode for m in a.modes if m.mode in {n.mode for n in b.modes}]
    sections, payload = [], {"a": str(files[0]), "b": str(files[1]), "resamples": resamples, "modes": {}}
    for mode in shared:
        try:
            differences = compare(a, b, mode, resamples=resamples)
        except CompareError as e:
            raise click.ClickException(str(e)) from e
        sections.append(render_markdown(str(files[0]), str(files[1]), mode, a.queries, differences,
                                        resamples=resamples))
        payload["modes"][mode] = [d.to_dict() for d in differences]
    text = "\n\n".join(sections)
    click.echo(text)
    if json_out:
        json_out.write_text(json.dumps(payload, indent=1), encoding="utf-8")
    if markdown_out:
        markdown_out.write_text(text, encoding="utf-8")


@eval_command.command("same")
@click.argument("first", type=_FILE)
@click.argument("second", type=_FILE)
def same_command(first: Path, second: Path) -> None:
    """Whether two `kgrag eval --json` runs of one set behaved the same, question by question:
    ranked ids per mode, answers, and answers with the gold removed. Exit 1 when any differs
    (the differing question ids are listed)."""
    from kgrag.eval.same_behaviour import HEADER, compare_runs, load

    try:
        a, b = load(first), load(second)
    except ValueError as e:
        raise click.UsageError(str(e)) from e
    results = compare_runs(a, b)
    if not results:
        raise click.UsageError(f"{first} and {second} share no question and mode")
    click.echo(HEADER)
    for same in results:
        click.echo(same.row(str(a.get("dataset") or first.stem)))
    differing = list(dict.fromkeys(q for same in results for q in same.differing))
    for qid in differing:
        click.echo(f"differs: {qid}", err=True)
    sys.exit(1 if differing else 0)


@eval_command.command("report")
@click.argument("runs", nargs=-1, required=True, type=_FILE)
@click.option("--markdown", "markdown_out", type=_OUT, help="Write the tables to this file (default: print them).")
@click.option("--update", "page", type=_FILE,
              help="Replace the generated section of this Markdown page (between its 'kgrag eval report: begin' "
                   "and 'end' comment lines).")
@click.option("--summaries", type=click.Path(file_okay=False, path_type=Path),
              help="Also write each run's summary (no per-query records) here, as <run file name>.json.")
@click.option("--commit", help="The commit that measured runs which do not record one (older runs).")
@click.option("--date", help="The day (ISO) runs which do not record one were measured.")
def report_command(runs: tuple[Path, ...], markdown_out: Path | None, page: Path | None, summaries: Path | None,
                   commit: str | None, date: str | None) -> None:
    """Evaluation tables from `kgrag eval --json` runs (or their summaries): per set, every mode
    measured, the served mode first, each table naming its commit and date."""
    from kgrag.eval.tables import RunFileError, load_run, render, replace_section, write_summary

    try:
        loaded = [load_run(path, commit=commit, date=date) for path in runs]
        text = render(loaded)
        if page is not None:
            page.write_text(replace_section(page.read_text(encoding="utf-8"), text, name=str(page)), encoding="utf-8")
            click.echo(f"updated {page}", err=True)
    except RunFileError as e:
        raise click.UsageError(str(e)) from e
    if summaries is not None:
        summaries.mkdir(parents=True, exist_ok=True)
        for path, run in zip(runs, loaded):
            write_summary(run, summaries / f"{path.stem}.json")
        click.echo(f"wrote {len(loaded)} summaries to {summaries}", err=True)
    if markdown_out is not None:
        markdown_out.write_text(text, encoding="utf-8")
    elif page is None:
        click.echo(text, nl=False)
