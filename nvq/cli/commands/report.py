"""`nvq report`: who used the cards — GPU-hours, jobs by outcome, waits, preemptions."""

from __future__ import annotations

import time

import typer

from nvq.cli.app import JsonOpt
from nvq.cli.params import CliError

on_report = typer.Typer()  # attached as the `report` command in nvq.cli.commands


@on_report.command("report")
def report(
    since: str = typer.Option("7d", "--since", help="From: 7d (ago) or 2026-11-24[T09:00]."),
    until: str = typer.Option(None, "--until", help="To (default now): as --since."),
    by: str = typer.Option("user", "--by", help="Rows by user, submitter, tag, node or day."),
    as_csv: bool = typer.Option(False, "--csv", help="CSV: a header, one line a row."),
    as_json: bool = JsonOpt,
) -> int:
    """The usage report: GPU-hours reserved and used, jobs by outcome, failure rate,
    preemptions, and the wait from submission to first start, per row.

    Reserved: whole cards from dispatch to end; used: cards weighted by the part of
    each the job reserved (as fair share counts them), from start to end."""
    from nvq.cli.render.output import emit
    from nvq.cli.render.report import report_csv, report_text
    from nvq.client import Client
    from nvq.domain.report import BY
    from nvq.values import parse_since

    if by not in BY:
        raise CliError(f"--by {by!r}: expected one of {', '.join(BY)}", 2)
    now = time.time()
    try:
        start = parse_since(since, now)
        end = now if until is None else parse_since(until, now, "--until")
    except ValueError as exc:
        raise CliError(str(exc), 2) from None
    if end <= start:
        raise CliError("--until must be later than --since", 2)
    doc = Client().report(start, end, by=by)
    if as_csv and not as_json:
        print(report_csv(doc))
        return 0
    emit(doc, as_json, report_text(doc))
    return 0
