"""``kgrag feedback list | export``: read the ratings stored beside the knowledge base."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kgrag.feedback.ratings import RATINGS


def _store(settings):
    from kgrag.feedback.store import FILE_NAME, FeedbackStore

    if not (Path(settings.data_dir) / FILE_NAME).exists():
        raise click.ClickException(f"no feedback stored yet in {settings.data_dir} (nothing has been rated)")
    return FeedbackStore(settings.data_dir)


@click.group("feedback")
def feedback() -> None:
    """Ratings of answers given on the web page or POST /v1/feedback."""


@feedback.command("list")
@click.option("--rating", "ratings", multiple=True, type=click.Choice(RATINGS), help="Only these ratings (repeat).")
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N (oldest first).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object a line.")
@click.pass_obj
def list_feedback(settings, ratings, limit, as_json) -> None:
    """Every rating, oldest first."""
    store = _store(settings)
    try:
        items = store.list(limit=limit, ratings=ratings)
    finally:
        store.close()
    for item in items:
        if as_json:
            click.echo(json.dumps(item.to_dict(), ensure_ascii=False))
            continue
        marked = ", ".join(r.chunk_id for r in item.relevant) or "-"
        click.echo(f"{item.created_at}  {item.rating:<14} {item.question}")
        click.echo(f"    cited: {', '.join(c['chunk_id'] for c in item.citations) or '-'}; marked right: {marked}"
                   + (f"; comment: {item.comment}" if item.comment else "")
                   + (f"; trace {item.trace_id}" if item.trace_id else ""))
    click.echo(f"{len(items)} rating(s)", err=True)


@feedback.command("export")
@click.argument("out", type=click.Path(dir_okay=True, path_type=Path))
@click.pass_obj
def export(settings, out: Path) -> None:
    """Write the rated questions as an evaluation set: OUT/queries.jsonl (OUT a folder) or OUT
    (a .jsonl file), in the shared/bench format. Then: kgrag eval --queries OUT/queries.jsonl."""
    from kgrag.feedback.export import export_queries, write_jsonl

    store = _store(settings)
    try:
        result = export_queries(store.list())
    finally:
        store.close()
    path = out if out.suffix == ".jsonl" else out / "queries.jsonl"
    if not result.records:
        raise click.ClickException(
            f"no rated question names a right source ({len(result.without_gold)} rating(s) without one): nothing to export")
    write_jsonl(result.records, path)
    click.echo(f"wrote {len(result.records)} question(s) to {path}")
    if result.without_gold:
        click.echo(f"left out {len(result.without_gold)} rating(s) that mark no right source", err=True)
    if result.superseded:
        click.echo(f"{result.superseded} older rating(s) of a question rated again were replaced by the latest", err=True)
