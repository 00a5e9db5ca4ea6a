"""The argv after `job submit` as `SubmitArgs`, by the CLI's own parsers and without
running anything: the fast path's table (nvq.cli.fast_submit) for the shapes it
takes, else click's parse of the typer command itself. The queue parses a submit
typed inside a job with this (nvq.daemon.handlers.submit_from_job), so the `nvq` in
a job takes exactly the options, forms and refusals of the `nvq` outside it."""

from __future__ import annotations

import click

from nvq.cli.flag_values import CliError
from nvq.cli.submit_flow import SubmitArgs


def submit_args(argv: list[str]) -> SubmitArgs:
    """`argv` (what follows `job submit`) parsed; CliError (exit 2) says what is wrong."""
    from nvq.cli.fast_submit import parse

    parsed = parse(argv)
    if parsed is not None:
        return parsed
    import typer.main

    from nvq.cli.commands import full_app
    from nvq.cli.dashes import check_before_dashes

    group = typer.main.get_command(full_app())
    assert isinstance(group, click.Group)
    job = group.commands["job"]
    assert isinstance(job, click.Group)
    command = job.commands["submit"]
    try:
        ctx = command.make_context("nvq job submit", list(argv))
    except click.exceptions.Exit:  # --help: nothing to submit
        raise CliError("nvq job submit --help: read it with `nvq job submit --help`", 2) from None
    except click.ClickException as exc:
        raise CliError(exc.format_message(), 2) from None
    check_before_dashes(ctx, ctx.params.get("command"))
    fields = set(SubmitArgs.__struct_fields__)
    values = {k: v for k, v in ctx.params.items() if k in fields and v is not None}
    values["command"] = list(values.get("command") or [])
    return SubmitArgs(**values)
