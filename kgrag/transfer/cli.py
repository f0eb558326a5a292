"""``kgrag transfer``: copy the knowledge base into other stores (see ``kgrag.transfer``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from kgrag.config import CHUNK_STORE_KINDS, EMBEDDED, GRAPH_STORE_KINDS, Settings

_SERVERS = ", ".join(
    [f"{k} (graph)" for k in GRAPH_STORE_KINDS if k != EMBEDDED] + [f"{k} (chunks)" for k in CHUNK_STORE_KINDS if k != EMBEDDED]
)


@click.command()
@click.option("--to", "to", required=True, metavar="STORES",
              help=f"Target stores, comma-separated: {_SERVERS}, {EMBEDDED} (every half not named).")
@click.option("--from", "from_", metavar="STORES",
              help="Source stores, same form (default: the configured graph_store/chunk_store).")
@click.option("--target-data-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Data dir of an SQLite target (default: --data-dir).")
@click.option("--force", is_flag=True, help="Rewrite graph documents the target already has with the same hash.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--no-progress", is_flag=True, help="Hide the progress bars.")
@click.pass_obj
def transfer(settings: Settings, to: str, from_: str | None, target_data_dir: Path | None, force: bool,
             as_json: bool, no_progress: bool) -> None:
    """Copy the knowledge base into other stores, without re-embedding or re-extracting.

    \b
    kgrag transfer --to neo4j,elasticsearch     embedded → servers (settings.neo4j / .elasticsearch)
    kgrag transfer --from neo4j,elasticsearch --to sqlite --target-data-dir ./back
    Idempotent; ends with a count check (exit 1 when source and target differ).
    """
    from kgrag.errors import StoreError
    from kgrag.transfer.copy import run_transfer
    from kgrag.transfer.plan import TransferError, plan_transfer

    try:
        plan = plan_transfer(settings, to, source_kinds=from_, target_data_dir=target_data_dir)
    except TransferError as e:
        raise click.UsageError(str(e)) from e
    for note in plan.notes:
        click.echo(note, err=True)
    try:
        report = run_transfer(plan, force=force, progress=not no_progress and sys.stderr.isatty())
    except StoreError as e:
        click.echo(f"transfer failed: {e}", err=True)
        sys.exit(1)
    body = report.to_dict()
    if as_json:
        click.echo(json.dumps(body, ensure_ascii=False, indent=2, default=str))
    else:
        for half in ("chunks", "graph"):
            if half in body:
                h = body[half]
                written = ", ".join(f"{v} {k}" for k, v in h["written"].items())
                click.echo(f"{half}: {h['from']} → {h['to']}: {written} in {h['seconds']:.1f}s")
                click.echo("  target now: " + ", ".join(f"{v} {k}" for k, v in h["target"].items()))
                for m in h["mismatches"]:
                    click.echo(f"  MISMATCH {m}", err=True)
        click.echo("verified: source and target counts agree" if report.ok else "verification FAILED", err=not report.ok)
    sys.exit(0 if report.ok else 1)
