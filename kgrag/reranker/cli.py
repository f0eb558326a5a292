"""``kgrag reranker train | show``: the cross-encoder fine-tuned on this knowledge base."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click


@click.group("reranker")
def reranker() -> None:
    """The cross-encoder trained on this knowledge base (docs/reranker.md)."""


@reranker.command("train")
@click.option("--minutes", type=click.FloatRange(min=0.5), help="Stop training after this long (the steps done are kept).")
@click.option("--queries", type=click.IntRange(min=10), help="Training queries at most (default: the tuned number).")
@click.option("--gold", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Labelled questions to train on too (queries.jsonl of kgrag eval: question, gold_ids = document ids). "
                   "Never evaluate on what you train on: see --gold-half.")
@click.option("--gold-half", type=click.Choice(["even", "odd", "all"]), default="all", show_default=True,
              help="Train on the questions at even or odd positions of --gold only (evaluate on the other half).")
@click.option("--no-feedback", is_flag=True, help="Leave the ratings of the feedback store out.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
@click.pass_obj
def train(settings, minutes: float | None, queries: int | None, gold: Path | None, gold_half: str, no_feedback: bool,
          as_json: bool, no_progress: bool) -> None:
    """Fine-tune the shipped MiniLM as a cross-encoder on queries mined from the knowledge base
    (headings, definitions, table rows, graph relations and paths, sentences, rated questions),
    and install it in <data dir>/reranker. Needs PyTorch (pip install 'kgrag[rerank]'); answering
    with the result does not."""
    from kgrag.components import Components
    from kgrag.reranker.background import needs_torch
    from kgrag.reranker.job import RerankerTrainingError, train_reranker, with_tuning
    from kgrag.reranker.progress import ProgressBar

    if (missing := needs_torch()) is not None:  # said before minutes of mining
        raise click.ClickException(missing)
    golden = _gold(gold, gold_half) if gold else ()
    comps = Components(settings)
    bar = ProgressBar(enabled=not no_progress)
    try:
        tuning = with_tuning(max_queries=queries) if queries else with_tuning()
        report = train_reranker(comps, gold=golden, feedback=not no_feedback, tuning=tuning,
                                budget_s=minutes * 60 if minutes else None, report=bar.update)
    except RerankerTrainingError as e:
        raise click.ClickException(str(e)) from None
    finally:
        bar.close()
        comps.close()
    if as_json:
        click.echo(json.dumps(report.to_dict()))
        return
    click.echo(f"reranker installed in {report.model_dir} ({report.size_bytes / 1e6:.1f} MB)")
    click.echo(f"  trained on {sum(report.examples.values())} queries "
               f"({', '.join(f'{k} {v}' for k, v in report.examples.items() if v)}), {report.steps} steps, "
               f"{report.training_seconds:.0f} s of {report.total_seconds:.0f} s"
               + (" (stopped by --minutes)" if report.stopped_early else ""))
    held = report.held_back
    if held.get("queries"):
        click.echo(f"  held-back queries: the reranker puts the answer first in {held['reranker_first']}%, "
                   f"BM25 + dense ranks in {held['ranked_first']}% ({held['queries']} queries)")
    if report.skipped_chunks:
        click.echo(f"  {report.skipped_chunks} chunks in other scripts (Chinese) were left out: the model reads "
                   "English only, and they are never reranked")
    _say_setting(settings, Path(report.model_dir))


def _say_setting(settings, model: Path) -> None:
    configured = settings.retrieval.reranker_path
    if configured and Path(configured).expanduser().resolve() == model.resolve():
        click.echo("  retrieval.reranker_path names it: servers load it at their next start")
    elif configured:
        click.echo(f"  retrieval.reranker_path names another model ({configured}): set it to {model} to use this one",
                   err=True)
    else:
        click.echo(f"  to rerank with it, set retrieval.reranker_path = \"{model}\" (KGRAG_RETRIEVAL__RERANKER_PATH)")


def _gold(path: Path, half: str):
    from kgrag.eval.data import load_queries
    from kgrag.reranker.mining import GoldQuestion

    try:
        queries = load_queries(path)
    except Exception as e:  # noqa: BLE001 - the eval loader's errors name the line; pass them on
        raise click.ClickException(f"--gold {path}: {e}") from None
    keep = {"all": lambda i: True, "even": lambda i: i % 2 == 0, "odd": lambda i: i % 2 == 1}[half]
    return [GoldQuestion(q.question, tuple(q.gold_ids)) for i, q in enumerate(queries) if keep(i)]


@reranker.command("show")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def show(settings, as_json: bool) -> None:
    """What the trained reranker of this knowledge base is (its manifest), and whether the
    settings use it."""
    from kgrag.reranker.job import model_dir

    folder = model_dir(settings.data_dir)
    manifest_path = folder / "reranker.json"
    if not manifest_path.is_file():
        click.echo(f"no trained reranker in {folder}: run `kgrag reranker train`", err=True)
        sys.exit(1)
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest["path"] = str(folder)
    manifest["in_use"] = bool(settings.retrieval.reranker_path) and \
        Path(settings.retrieval.reranker_path).expanduser().resolve() == folder.resolve()
    if as_json:
        click.echo(json.dumps(manifest))
        return
    for key in ("path", "in_use", "created", "base", "max_length", "examples", "steps", "training_seconds",
                "held_back"):
        click.echo(f"{key:>16}: {manifest.get(key)}")
