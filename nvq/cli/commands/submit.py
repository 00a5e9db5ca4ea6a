"""`nvq job submit`: flags (or a manifest) → one JobSpec, checked here so bad input
fails before the daemon is asked."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import msgspec
import typer

from nvq.cli.app import JsonOpt
from nvq.cli.dashes import KeepsRawArgs, check_before_dashes
from nvq.cli.params import CliError, duration, env_pairs, ids, read_local, size, with_manifest
from nvq.cli.render.jobs import outcome
from nvq.cli.render.output import emit
from nvq.client import Client, ClientError
from nvq.model import Job, JobSpec

on_job = typer.Typer()  # attached to the `job` group in nvq.cli.commands
# `job shell` runs this command's own option parsing and hands the spec to the
# function it leaves here in the click context's meta (nvq.cli.commands.shell).
RUN_SPEC = "nvq.run_spec"


@on_job.command(
    "submit",
    cls=KeepsRawArgs,
    context_settings={"allow_interspersed_args": False},
)
def job_submit(
    ctx: typer.Context,
    command: list[str] = typer.Argument(None, help="The command, after --, or one quoted string."),
    name: str = typer.Option("", "--name", "-n", help="A short label."),
    vram: str = typer.Option(None, "--vram", help="VRAM to reserve on each GPU, e.g. 20GiB."),
    gpus: int = typer.Option(1, "--gpus", help="GPUs needed; 0 for a CPU-only job."),
    node: str = typer.Option(None, "--node", help="Pin to a node (prefix match)."),
    note: str = typer.Option("", "--note", help="What the job is for."),
    priority: int = typer.Option(0, "--priority", help="Higher runs first."),
    timeout: str = typer.Option(None, "--timeout", help="Kill it after this long (90, 5m, 2h)."),
    env: list[str] = typer.Option([], "--env", help="KEY=VALUE, repeatable."),
    workdir: str = typer.Option(None, "--workdir", help="Directory to run in (on the node)."),
    tag: list[str] = typer.Option([], "--tag", help="A tag, repeatable."),
    after: str = typer.Option(None, "--after", help="Run after these jobs completed: 12,13."),
    after_any: str = typer.Option(None, "--after-any", help="Run after these jobs ended, however."),
    script: Path = typer.Option(None, "--script", help="Use this local file as the command."),
    wait: bool = typer.Option(False, "--wait", help="Block until the job ends."),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Check it, say where it would start now; store nothing."
    ),
    retries: int = typer.Option(0, "--retries", help="Restart it up to N times if it vanishes."),
    notify_on: str = typer.Option(
        None, "--notify-on",
        help="What its webhooks hear of: start,end,fail,time-limit-80 (default: theirs).",
    ),
    retries_on: str = typer.Option(
        "lost",
        "--retries-on",
        help="What --retries restarts: lost (it vanished), oom (the OOM killer), or both.",
    ),
    cuda: str = typer.Option(None, "--cuda", help="Minimum driver CUDA version, e.g. 13.0."),
    image: str = typer.Option(
        None, "--image", help="Run it in this container image (the node's podman/docker)."
    ),
    memory: str = typer.Option(None, "--memory", help="Host RAM it needs (and its limit): 32GiB."),
    lane: str = typer.Option(None, "--lane", help="Append to a GPU's lane: NODE:GPU."),
    array: str = typer.Option(
        None, "--array", help="One job per index: 0-99[:step][%K]; {} = index."
    ),
    manifest: Path = typer.Option(None, "--manifest", help="Read the job from a manifest.toml."),
    max_runtime: str = typer.Option(
        None, "--max-runtime", help="On a borrowed node, back to the queue after this long."
    ),
    begin: str = typer.Option(
        None, "--begin", help="Start no earlier than this: 2026-12-02T22:00, or after 2h."
    ),
    signal: str = typer.Option(
        None, "--signal", help="Send SIG this long before --timeout ends it: USR1@5m."
    ),
    no_reassign: bool = typer.Option(
        False, "--no-reassign", help="Not safe to run twice: lost (not rerun) if its node dies."
    ),
    preemptible: bool = typer.Option(
        False, "--preemptible", help="A more urgent job may stop it; it waits again to resume."
    ),
    reservation: str = typer.Option(
        None, "--reservation", help="Run on this reservation's cards, in its window."
    ),
    email_on_success: bool = typer.Option(
        None, "--email-on-success/--no-email-on-success", help="E-mail me when it completes."
    ),
    email_on_failure: bool = typer.Option(
        None, "--email-on-failure/--no-email-on-failure", help="E-mail me when it ends badly."
    ),
    no_env: bool = typer.Option(
        False, "--no-env", help="Take only --env values, not this shell's environment."
    ),
    no_snapshot: bool = typer.Option(
        False, "--no-snapshot", help="Do not take a copy of this directory with the job."
    ),
    in_place: bool = typer.Option(
        None, "--in-place/--snapshot",
        help="Run in this directory itself (live files; only where it exists).",
    ),
    setup: str = typer.Option(
        None, "--setup", help="Build the job's environment once per node ($NVQ_ENV_DIR)."
    ),
    setup_files: list[str] = typer.Option(
        [], "--setup-files", help="Files whose content keys --setup (pattern, repeatable)."
    ),
    from_cwd: str = typer.Option(None, "--from-cwd", hidden=True),
    from_env: str = typer.Option(None, "--from-env", hidden=True),
    from_snapshot: str = typer.Option(None, "--from-snapshot", hidden=True),
    as_json: bool = JsonOpt,
) -> int:
    """Queue a job."""
    check_before_dashes(ctx, command)
    if script is not None:
        if command:
            raise CliError("give either --script or a command, not both", 2)
        body = read_local(script, "--script")  # "-": stdin (what a [remote] forward sends)
    elif not command and manifest is None and RUN_SPEC not in ctx.meta:
        raise CliError("no command given: nvq job submit [OPTIONS] -- CMD ...", 2)
    else:
        body = "" if not command else command[0] if len(command) == 1 else shlex.join(command)
    if dry_run and wait:
        raise CliError("give --dry-run or --wait, not both", 2)
    # a dry run takes no snapshot: it must store nothing, and the files do not
    # change where the job would go
    no_snapshot = no_snapshot or dry_run
    spec_env = env_pairs(env)
    # the snapshot machinery (pathspec, the blob store): only a submit loads it
    from nvq.cli.submit_world import WorldOptions, submit_world

    spec = JobSpec(
        command=body,
        name=name,
        gpus=gpus,
        vram_mb=size(vram, "--vram"),
        node=node,
        priority=priority,
        timeout=duration(timeout, "--timeout"),
        env=spec_env,
        workdir=workdir,
        tags=tag,
        note=note,
        submitter=os.environ.get("NVQ_SUBMITTER", ""),
        after=ids(after, "--after"),
        after_any=ids(after_any, "--after-any"),
        retries=retries,
        cuda=cuda,
        image=image,
        memory_mb=size(memory, "--memory"),
        lane=lane,
        array=array,
        email_on_success=email_on_success,
        email_on_failure=email_on_failure,
        max_runtime=duration(max_runtime, "--max-runtime"),
        no_reassign=no_reassign,
        preemptible=preemptible,
        reservation=reservation,
        retries_on=_retries_on(retries_on),
        notify_on=_notify_on(notify_on),
        begin_at=_begin(begin),
        signal=_signal(signal),
        setup=setup,
        setup_files=setup_files,
    )
    if manifest is not None:
        spec = with_manifest(spec, manifest, ctx)
    # The daemon's rule, here first: a mistake is named before a snapshot is taken.
    checked(spec, shell=RUN_SPEC in ctx.meta)
    spec = msgspec.structs.replace(spec, **submit_world(
        WorldOptions(no_env, no_snapshot, in_place, workdir), from_cwd, from_env, from_snapshot,
    ))
    if spec.image and not dry_run:  # carried to nodes that cannot pull it
        from nvq.cli.submit_world import staged_image

        staged = staged_image(spec.image)
        if staged is not None:
            spec = msgspec.structs.replace(spec, image_manifest=staged[0], image_id=staged[1])
    client = Client()
    if dry_run:  # `job shell --dry-run` too: where the shell would open
        from nvq.cli.render.why import preview_text

        doc = client.submit_preview(spec)
        emit(doc, as_json, preview_text(doc))
        return 0
    if RUN_SPEC in ctx.meta:
        return int(ctx.meta[RUN_SPEC](spec, as_json))
    job = client.submit_spec(spec)
    if from_cwd is None and not no_env:
        from nvq.cli.own_python import warn_once
        from nvq.home import default_root

        warn_once(spec.command, spec.env_captured or {}, default_root())
    if job.array_id is not None:
        return _submitted_array(client, job, spec.array, wait=wait, as_json=as_json)
    said = f"submitted job {job.id} ({job.name}){unchecked_note(job)}{held_note(client, job)}"
    if not wait:
        emit(job, as_json, said)
        return 0
    if not as_json:
        print(f"{said}; waiting", file=sys.stderr)
    done = client.wait(job.id)
    (final,) = done.jobs
    emit(final, as_json, outcome(final))
    return done.exit_code


def _submitted_array(
    client: Client, first: Job, array: str | None, *, wait: bool, as_json: bool
) -> int:
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


def held_note(client: Client, job: Job) -> str:
    """`; held: ...` when an `--after` prerequisite had already ended badly: the job
    will not run by itself (the daemon holds it on its next pass), and the submit says
    so rather than only `job ls`."""
    why = f": {job.reason}" if str(job.state) == "held" and job.reason else ""
    if not why:
        for dep in job.after:
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
    has = "has" if len(unreported) == 1 else "have"
    return (
        f"; accepted while node{'s' if len(unreported) > 1 else ''} {nodes} {has} not "
        "reported (whether any node can run it is checked when they do)"
    )


def _signal(text: str | None) -> str:
    if text is None:
        return ""
    from nvq.domain.job_signal import normal

    try:
        return normal(text)
    except ValueError as exc:
        raise CliError(str(exc), 2) from None


def _begin(text: str | None) -> float | None:
    if text is None:
        return None
    import time

    from nvq.values import parse_begin

    try:
        return parse_begin(text, time.time())
    except ValueError as exc:
        raise CliError(str(exc), 2) from None


def _notify_on(text: str | None) -> list[str] | None:
    if text is None:
        return None
    from nvq.domain.notify_on import parse_notify_on

    try:
        return parse_notify_on(text)
    except ValueError as exc:
        raise CliError(str(exc), 2) from None


def _retries_on(text: str) -> str:
    from nvq.domain.retry_policy import parse_retries_on

    try:
        return parse_retries_on(text)
    except ValueError as exc:
        raise CliError(str(exc), 2) from None


def checked(spec: JobSpec, *, shell: bool = False) -> None:
    """`validate_spec`, the one rule the daemon applies too, with its line and exit 2.
    `shell`: `job shell`'s spec, interactive (its command may be empty)."""
    from nvq.domain.validate import SpecError, validate_spec

    try:
        validate_spec(msgspec.structs.replace(spec, interactive=True) if shell else spec)
    except SpecError as exc:
        raise CliError(str(exc), 2) from None
