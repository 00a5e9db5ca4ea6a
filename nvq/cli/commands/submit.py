"""`nvq job submit`'s options for typer; what they do is nvq.cli.submit_flow, which
the typer-free fast path (nvq.cli.fast_submit) calls too."""

from __future__ import annotations

from pathlib import Path

import typer

from nvq.cli.app import JsonOpt
from nvq.cli.dashes import KeepsRawArgs, check_before_dashes
from nvq.cli.params import with_manifest
from nvq.cli.submit_flow import SubmitArgs, submit

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
    quiet: bool = typer.Option(
        False, "--quiet", help="Only cards with nothing else on them, held whole while it runs."
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
    args = SubmitArgs(
        command=command or [], name=name, vram=vram, gpus=gpus, node=node, note=note,
        priority=priority, timeout=timeout, env=env, workdir=workdir, tag=tag, after=after,
        after_any=after_any, script=script, wait=wait, dry_run=dry_run, retries=retries,
        notify_on=notify_on, retries_on=retries_on, cuda=cuda, image=image, memory=memory,
        lane=lane, array=array, manifest=manifest, max_runtime=max_runtime, begin=begin,
        signal=signal, no_reassign=no_reassign, preemptible=preemptible, quiet=quiet,
        reservation=reservation, email_on_success=email_on_success,
        email_on_failure=email_on_failure, no_env=no_env, no_snapshot=no_snapshot,
        in_place=in_place, setup=setup, setup_files=setup_files, from_cwd=from_cwd,
        from_env=from_env, from_snapshot=from_snapshot, as_json=as_json,
    )
    return submit(
        args,
        with_manifest=None if manifest is None else lambda spec: with_manifest(spec, manifest, ctx),
        run_spec=ctx.meta.get(RUN_SPEC),
    )
