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


@click.command("eval")
@click.option("--corpus", required=True, type=_FILE, help="Passages, one {id, title, text} JSON object a line.")
@click.option("--queries", required=True, type=_FILE, help="Questions, one {id, question, answers, gold_ids} a line.")
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N queries.")
@click.option("--modes", help="Comma-separated ablation rows, paths joined by '+' (dense, bm25, graph; '+rerank'). "
              "Default: bm25,dense,graph,bm25+dense,bm25+dense+graph (+ bm25+dense+graph+rerank with a reranker).")
@click.option("--ks", default="1,2,5,10", show_default=True, help="Recall cut-offs.")
@click.option("--top-k", type=click.IntRange(min=1), help="Passages ranked per query (default: max(largest k, 10)).")
@click.option("--answers/--no-answers", default=None, help="Score generated answers (default: when llm.model is set; "
              "--answers without an LLM scores the extractive answerer).")
@click.option("--answer-mode", help="Mode whose hits answers are generated from (default: the last mode).")
@click.option("--json", "json_out", type=_OUT, help="Write the full report with per-query results here.")
@click.option("--markdown", "markdown_out", type=_OUT, help="Write the Markdown tables here too.")
@click.option("--chart", "chart_out", type=_OUT, help="Write a PNG bar chart of recall per mode here.")
@click.option("--kb-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Knowledge base directory (default: <data dir>/eval/<set>-<corpus hash>-<ingest settings hash>).")
@click.option("--reingest", is_flag=True, help="Delete the evaluation knowledge base first and ingest again.")
@click.option("--no-progress", is_flag=True, help="Hide progress bars.")
@click.pass_obj
def eval_command(settings, corpus: Path, queries: Path, limit, modes, ks, top_k, answers, answer_mode,
                 json_out, markdown_out, chart_out, kb_dir, reingest, no_progress) -> None:
    """Score retrieval (and answers) on a benchmark set; prints a Markdown ablation table."""
    from kgrag.components import Components
    from kgrag.eval.data import EvalDataError, load_corpus
    from kgrag.eval.kb import KnowledgeBaseError, default_kb_dir, require_embedded_stores, reset_kb_dir
    from kgrag.eval.runner import EvalConfigError, run_eval

    try:
        require_embedded_stores(settings)
        kb_dir = kb_dir or default_kb_dir(settings, load_corpus(corpus))
        if reingest:
            reset_kb_dir(kb_dir, settings)
    except (EvalDataError, KnowledgeBaseError) as e:
        raise click.UsageError(str(e)) from e
    comps = Components(settings.model_copy(update={"data_dir": kb_dir}))
    try:
        report = run_eval(comps, corpus, queries, modes=modes, limit=limit, ks=_ints(ks), top_k=top_k,
                          answers=answers, answer_mode=answer_mode,
                          progress=not no_progress and sys.stderr.isatty())
    except (EvalDataError, EvalConfigError) as e:
        raise click.UsageError(str(e)) from e
    except KnowledgeBaseError as e:
        raise click.ClickException(str(e)) from e
    finally:
        comps.close()
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
