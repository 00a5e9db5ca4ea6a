"""`nvq job submit` after its arguments are parsed: flag values → one JobSpec, checked
by `validate_spec` (the daemon's rule) before a snapshot is taken, then sent.

Both ways in call this: typer's command (nvq.cli.commands.submit) and the fast path
that parses the common argv shapes without typer (nvq.cli.fast_submit). Neither
imports typer here, so a plain submit costs the interpreter, msgspec and the socket."""

from __future__ import annotations

import os
import shlex
import sys

import msgspec

from nvq.cli.flag_values import CliError, read, read_local
from nvq.cli.render.output import emit
from nvq.domain.submit_options import SUBMIT_OPTIONS
from nvq.model import Job, JobSpec

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs a submit milliseconds
    from collections.abc import Callable
    from typing import Any

    from nvq.client.sync import Client


def _args_fields() -> list[tuple[str, object, object]]:
    # Each option's field, its type as typer hands it over, and typer's default. The
    # types are for reading: msgspec checks none on construction.
    types: dict[str, object] = {"int": int, "list": list[str], "flag": bool, "switch": bool | None}
    return [("command", list[str], []), *(
        (o.param, types.get(o.kind, str | None), o.default) for o in SUBMIT_OPTIONS
    )]


if TYPE_CHECKING:
    class SubmitArgs(msgspec.Struct, kw_only=True):
        """Every flag of `job submit`, with typer's defaults: what the user typed
        (one field per row of nvq.domain.submit_options, named by its `param`)."""

        command: list[str]

        def __init__(self, **values: Any) -> None: ...
        def __getattr__(self, name: str) -> Any: ...
else:
    SubmitArgs = msgspec.defstruct("SubmitArgs", _args_fields(), kw_only=True, module=__name__)


def submit(
    a: SubmitArgs,
    *,
    with_manifest: Callable[[JobSpec], JobSpec] | None = None,
    run_spec: Callable[[JobSpec, bool], int] | None = None,
) -> int:
    """The exit status of the submit `a` asks for. `with_manifest`: merges `--manifest`
    (typer's path only: it needs to know which flags were typed); `run_spec`: `job
    shell`'s own continuation, which takes the checked spec."""
    spec = spec_of(a, run_spec is not None)
    if a.dry_run and a.wait:
        raise CliError("give --dry-run or --wait, not both", 2)
    # a dry run takes no snapshot: it must store nothing, and the files do not
    # change where the job would go
    no_snapshot = a.no_snapshot or a.dry_run
    # the snapshot machinery (pathspec, the blob store): only a submit loads it
    from nvq.cli.submit_world import WorldOptions, submit_world

    if a.manifest is not None and with_manifest is not None:
        spec = with_manifest(spec)
    # The daemon's rule, here first: a mistake is named before a snapshot is taken.
    checked(spec, shell=run_spec is not None)
    spec = msgspec.structs.replace(spec, **submit_world(
        WorldOptions(a.no_env, no_snapshot, a.in_place, a.workdir),
        a.from_cwd, a.from_env, a.from_snapshot,
    ))
    if spec.manifest_id and spec.cwd and a.from_cwd is None:  # a snapshot, taken here
        from nvq.cli.venv_command import venv_command

        spec = msgspec.structs.replace(spec, command=venv_command(spec.command, spec.cwd))
    if spec.image and not a.dry_run:  # carried to nodes that cannot pull it
        from nvq.cli.submit_world import staged_image

        staged = staged_image(spec.image)
        if staged is not None:
            spec = msgspec.structs.replace(spec, image_manifest=staged[0], image_id=staged[1])
    from nvq.client.sync import Client

    client = Client()
    if a.dry_run:  # `job shell --dry-run` too: where the shell would open
        from nvq.cli.render.why import preview_text

        doc = client.submit_preview(spec)
        emit(doc, a.as_json, preview_text(doc))
        return 0
    if run_spec is not None:
        return int(run_spec(spec, a.as_json))
    job = client.submit_spec(spec)
    vram_note = getattr(job, "vram_note", None)
    if isinstance(vram_note, str) and not a.as_json:
        print(f"nvq: {vram_note}", file=sys.stderr)
    if a.from_cwd is None and not a.no_env:
        from nvq.cli.own_python import warn_once
        from nvq.home import default_root

        warn_once(spec.command, spec.env_captured or {}, default_root())
    if job.array_id is not None:
        return _submitted_array(client, job, spec.array, wait=a.wait, as_json=a.as_json)
    said = f"submitted job {job.id} ({job.name}){unchecked_note(job)}{held_note(client, job)}"
    if not a.wait:
        emit(without_env(job), a.as_json, said)
        return 0
    if not a.as_json:
        print(f"{said}; waiting", file=sys.stderr)
    from nvq.cli.render.jobs import outcome

    done = client.wait(job.id)
    (final,) = done.jobs
    emit(without_env(final), a.as_json, outcome(final))
    return done.exit_code


def _submitted_array(
    client: Client, first: Job, array: str | None, *, wait: bool, as_json: bool
) -> int:
    from nvq.cli.render.jobs import outcome
    from nvq.cli.sweeps import submitted, submitted_line

    doc = submitted(client, first, array)
    said = submitted_line(doc) + unchecked_note(first)
    if not wait:
        emit(doc, as_json, said)
        return 0
    if not as_json:
        print(f"{said}; waiting", file=sys.stderr)
    done = client.wait(doc.ids)
    emit(done, as_json, "\n".join(outcome(j) for j in done.jobs))
    return done.exit_code


def spec_of(a: SubmitArgs, shell: bool = False) -> JobSpec:
    """The JobSpec the flags ask for, before the job's world (directory, environment,
    snapshot) is added: each value read as the flag documents it (CliError, exit 2,
    when it is not). `shell`: `job shell`'s, which may have no command."""
    if a.script is not None:
        if a.command:
            raise CliError("give either --script or a command, not both", 2)
        body = read_local(a.script, "--script")  # "-": stdin (what a [remote] forward sends)
    elif not a.command and a.manifest is None and not shell:
        raise CliError("no command given: nvq job submit [OPTIONS] -- CMD ...", 2)
    else:
        body = "" if not a.command else a.command[0] if len(a.command) == 1 else shlex.join(
            a.command
        )
    return JobSpec(
        command=body,
        submitter=os.environ.get("NVQ_SUBMITTER", ""),
        **{o.field: read(o, getattr(a, o.param)) for o in SUBMIT_OPTIONS if o.field},
    )


def without_env(job: Job) -> Job:
    """The job as a submit prints it: without the captured environment (`env_captured`
    null, as in lists): it is the submitting shell's, kilobytes an agent does not need
    back; `job show ID --json` has it."""
    return msgspec.structs.replace(job, env_captured=None)


def held_note(client: Client, job: Job) -> str:
    """`; held: ...` when an `--after` prerequisite had already ended badly: the job
    will not run by itself (the daemon holds it on its next pass), and the submit says
    so rather than only `job ls`."""
    why = f": {job.reason}" if str(job.state) == "held" and job.reason else ""
    if not why:
        for dep in job.after:
            from nvq.client.errors import ClientError
            from nvq.domain.deps import BAD_ENDS

            try:
                state = client.show(dep).state
            except ClientError:
                continue  # purged: counts as completed
            if state in BAD_ENDS:
                why = f": job {dep} {state}"
                break
        else:
            return ""
    if job.kill_on_invalid_dep:
        return f"; to be cancelled{why} (--kill-on-invalid-dep)"
    return (
        f"; held{why} (`nvq job release {job.id}` runs it anyway, "
        f"`nvq job cancel {job.id}` drops it)"
    )


def unchecked_note(job: Job) -> str:
    """`; accepted while node gpu2 has not reported`, when the daemon could not yet
    check that some node can ever run it."""
    unreported = getattr(job, "unreported", None)
    if not isinstance(unreported, list) or not unreported:
        return ""
    nodes = ", ".join(unreported)
    one = len(unreported) == 1
    return (
        f"; accepted while node{'' if one else 's'} {nodes} {'has' if one else 'have'} "
        f"not reported (whether any node can run it is checked when "
        f"{'it does' if one else 'they do'})"
    )


def checked(spec: JobSpec, *, shell: bool = False) -> None:
    """`validate_spec`, the one rule the daemon applies too, with its line and exit 2.
    `shell`: `job shell`'s spec, interactive (its command may be empty)."""
    from nvq.domain.validate import SpecError, validate_spec
    from nvq.domain.vram_history import VRAM_AUTO

    if spec.vram_mb == VRAM_AUTO:  # a size the daemon picks: no size to check here
        spec = msgspec.structs.replace(spec, vram_mb=0)
    try:
        validate_spec(msgspec.structs.replace(spec, interactive=True) if shell else spec)
    except SpecError as exc:
        raise CliError(str(exc), 2) from None
