"""`nvq job submit` for typer: its options are the rows of
nvq.domain.submit_options, given to typer as the function's signature; what they do
is nvq.cli.submit_flow, which the typer-free fast path (nvq.cli.fast_submit) calls
too."""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import typer

from nvq.cli.app import JsonOpt
from nvq.cli.dashes import KeepsRawArgs, check_before_dashes
from nvq.cli.params import with_manifest
from nvq.cli.submit_flow import SubmitArgs, submit
from nvq.domain.submit_options import SUBMIT_OPTIONS, SubmitOption

on_job = typer.Typer()  # attached to the `job` group in nvq.cli.commands
# `job shell` runs this command's own option parsing and hands the spec to the
# function it leaves here in the click context's meta (nvq.cli.commands.shell).
RUN_SPEC = "nvq.run_spec"


def typer_option(o: SubmitOption, flags: tuple[str, ...], default: object, help: str) -> Any:
    return typer.Option(default, *flags, help=help or None, hidden=o.hidden)


# What typer hands over for each kind (its parameter's annotation).
TYPES: dict[str, Any] = {
    "text": str, "int": int, "list": list[str], "flag": bool, "switch": bool, "path": Path
}


def parameters(options: Iterable[SubmitOption]) -> list[inspect.Parameter]:
    """`job submit`'s typer parameters for these rows of the table."""
    return [
        inspect.Parameter(
            o.param, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=TYPES[o.kind],
            default=typer_option(o, o.flags, o.default, o.help),
        )
        for o in options
    ]


@on_job.command(
    "submit",
    cls=KeepsRawArgs,
    context_settings={"allow_interspersed_args": False},
)
def job_submit(
    ctx: typer.Context,
    command: list[str] = typer.Argument(None, help="The command, after --, or one quoted string."),
    **options: Any,
) -> int:
    """Queue a job."""
    check_before_dashes(ctx, command)
    manifest: Path | None = options["manifest"]
    return submit(
        SubmitArgs(command=command or [], **options),
        with_manifest=None if manifest is None else lambda spec: with_manifest(spec, manifest, ctx),
        run_spec=ctx.meta.get(RUN_SPEC),
    )


# Its options are the table's (nvq.domain.submit_options), as typer reads a signature
# (when it builds the click command, after this module has loaded).
_fixed = list(inspect.signature(job_submit).parameters.values())[:2]
job_submit.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [*_fixed, *parameters(SUBMIT_OPTIONS)], return_annotation=int
)


@on_job.command("clone")
def job_clone(
    job_id: int = typer.Argument(..., help="The job to copy (it is left as it is)."),
    as_json: bool = JsonOpt,
) -> int:
    """Queue a new job asking for what this one asked for: its command, world, snapshot."""
    from nvq import control as c
    from nvq.cli.render.output import emit
    from nvq.cli.submit_flow import without_env
    from nvq.client import Client

    job = Client().ask(c.Clone(id=job_id), c.Submitted)
    emit(without_env(job), as_json, f"submitted job {job.id} ({job.name}), a copy of job {job_id}")
    return 0
