"""`nvq job edit ID`: what a waiting job waits for, or what a job asks for."""

from __future__ import annotations

import inspect
from typing import Any

import typer

from nvq.cli.commands.submit import TYPES, parameters, typer_option
from nvq.cli.flag_values import read
from nvq.cli.params import CliError, ids
from nvq.cli.render.output import emit
from nvq.client import Client
from nvq.domain.submit_options import SUBMIT_OPTIONS, SubmitOption

on_job = typer.Typer()  # attached to the `job` group in nvq.cli.commands


# The submit options an edit changes (those the table marks), in the order its --help
# has always listed them; one marked later follows in the table's order. `command` is
# edit's own: a submit takes the command after --.
ORDER = ("node", "vram", "gpus", "memory", "cuda", "image", "timeout", "priority", "name", "note",
         "tag", "env", "lane", "command", "signal", "preemptible", "reservation", "notify_on")
_EDITED = {o.param: o for o in SUBMIT_OPTIONS if o.edit} | {"command": SubmitOption(
    flags=("--command",), param="command", kind="text", field="command",
    edit="The command, as one string.",
)}
EDITED = [_EDITED[p] for p in (*ORDER, *(p for p in _EDITED if p not in ORDER))]


@on_job.command("edit")
def job_edit(
    job_id: int = typer.Argument(..., help="A waiting (pending, held or paused) job."),
    drop_after: str = typer.Option(None, "--drop-after", help="Stop waiting for these: 12,13."),
    add_after: str = typer.Option(None, "--add-after", help="Also wait for these to complete."),
    **options: Any,
) -> int:
    """Change what a waiting job waits for; it keeps its id, note, place and submitter.

    The options of submit change what it asks for, checked as at submit (an event
    records each value before and after). A running job can change only --priority
    --name --note --tag --notify-on."""
    drop, add = ids(drop_after, "--drop-after"), ids(add_after, "--add-after")
    if str(options.get("vram") or "").strip().lower() == "auto":
        # auto sizes a new job from its command's history at submit; an edit names a size
        raise CliError("--vram auto is for job submit; job edit takes a size, e.g. 20GiB", 2)
    changes = {
        o.field: read(o, options[o.param]) for o in EDITED if options[o.param] not in (None, [])
    }
    as_json = bool(options["as_json"])
    if not drop and not add and not changes:
        raise CliError("nothing to change: give --drop-after/--add-after or what to change", 2)
    client = Client()
    job = client.edit(job_id, drop_after=drop, add_after=add) if drop or add else None
    if changes:
        job = client.edit_job(job_id, changes)
        from nvq.domain.validate import flag_of  # the validator: only an edit needs it

        flags = ", ".join(flag_of(k) or "--command" for k in changes)
        emit(job, as_json, f"job {job.id} {job.state}, changed {flags}")
        return 0
    assert job is not None
    waits = ",".join(map(str, job.after)) or "nothing"
    emit(job, as_json, f"job {job.id} {job.state}, waiting for {waits}")
    return 0


def _edit_parameters() -> list[inspect.Parameter]:
    return [
        inspect.Parameter(
            o.param, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=TYPES[o.kind],
            default=typer_option(o, o.edit_flags or o.flags, None, o.edit),
        )
        for o in EDITED
    ]


_fixed = list(inspect.signature(job_edit).parameters.values())[:3]
json_opt = parameters(o for o in SUBMIT_OPTIONS if o.param == "as_json")
job_edit.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [*_fixed, *_edit_parameters(), *json_opt], return_annotation=int
)


