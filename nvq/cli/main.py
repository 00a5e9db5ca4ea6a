"""The `nvq` command line. Every command takes `--json` and then prints exactly one JSON
document; errors are one line on stderr (or a JSON error document with `--json`) and a
non-zero exit."""

from __future__ import annotations

import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

import msgspec
import typer
from click import exceptions as click_exc

from nvq import control as c
from nvq.cli import ops as _ops
from nvq.cli import render
from nvq.cli.client import CliError, call, exchange, nvq_home
from nvq.cli.output import emit
from nvq.model import JobSpec

app = typer.Typer(
    name="nvq",
    help="A GPU job queue for your own machines.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
job_app = typer.Typer(help="Submit, watch and manage jobs.", no_args_is_help=True)
queue_app = typer.Typer(help="The queue as a whole: status, nodes, events.", no_args_is_help=True)
daemon_app = typer.Typer(
    help="Run the daemon in the foreground (or `stop` it).", invoke_without_command=True
)
app.add_typer(job_app, name="job")
app.add_typer(queue_app, name="queue")
node_app = typer.Typer(help="Nodes: install the runner.", no_args_is_help=True)
app.add_typer(daemon_app, name="daemon")
app.add_typer(node_app, name="node")

JsonOpt = typer.Option(False, "--json", help="Print one JSON document.")




def _size(value: str | None, flag: str) -> int:
    from nvq.units import parse_size

    if value is None:
        return 0
    try:
        return parse_size(value)
    except ValueError as exc:
        raise CliError(f"{flag}: {exc}", 2) from None


def _duration(value: str | None, flag: str) -> float | None:
    from nvq.units import parse_duration

    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise CliError(f"{flag}: {exc}", 2) from None


def _ids(value: str | None, flag: str) -> list[int]:
    if not value:
        return []
    try:
        ids = [int(part) for part in value.replace(" ", "").split(",") if part]
    except ValueError:
        raise CliError(f"{flag} {value!r}: expected job ids like 12,13", 2) from None
    if any(i <= 0 for i in ids):
        raise CliError(f"{flag} {value!r}: job ids are positive", 2)
    return ids


def _env_pairs(values: list[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in values:
        key, sep, val = item.partition("=")
        if not sep or not key or not key.replace("_", "a").isalnum() or key[0].isdigit():
            raise CliError(f"--env {item!r}: expected KEY=VALUE with a valid variable name", 2)
        env[key] = val
    return env


# ---------------------------------------------------------------- job


@job_app.command(
    "submit",
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
    retries: int = typer.Option(0, "--retries", help="Restart it up to N times if it vanishes."),
    cuda: str = typer.Option(None, "--cuda", help="Minimum driver CUDA version, e.g. 13.0."),
    memory: str = typer.Option(None, "--memory", help="Host RAM it needs (and its limit): 32GiB."),
    lane: str = typer.Option(None, "--lane", help="Append to a GPU's lane: NODE:GPU."),
    array: str = typer.Option(
        None, "--array", help="One job per index: 0-99[:step][%K]; {} = index."
    ),
    manifest: Path = typer.Option(None, "--manifest", help="Read the job from a manifest.toml."),
    max_runtime: str = typer.Option(
        None, "--max-runtime", help="On a borrowed node, back to the queue after this long."
    ),
    no_reassign: bool = typer.Option(
        False, "--no-reassign", help="Not safe to run twice: lost (not rerun) if its node dies."
    ),
    email_on_success: bool = typer.Option(
        None, "--email-on-success/--no-email-on-success", help="E-mail me when it completes."
    ),
    email_on_failure: bool = typer.Option(
        None, "--email-on-failure/--no-email-on-failure", help="E-mail me when it ends badly."
    ),
    as_json: bool = JsonOpt,
) -> int:
    """Queue a job."""
    from nvq.cli.ops import read_local

    if script is not None:
        if command:
            raise CliError("give either --script or a command, not both", 2)
        body = read_local(script, "--script")  # "-": stdin (what a [remote] forward sends)
    elif not command and manifest is None:
        raise CliError("no command given: nvq job submit [OPTIONS] -- CMD ...", 2)
    else:
        body = "" if not command else command[0] if len(command) == 1 else shlex.join(command)
    if gpus < 0:
        raise CliError("--gpus must be 0 or more", 2)
    spec_env = _env_pairs(env)
    spec = JobSpec(
        command=body,
        name=name,
        gpus=gpus,
        vram_mb=_size(vram, "--vram"),
        node=node,
        priority=priority,
        timeout=_duration(timeout, "--timeout"),
        env=spec_env,
        workdir=workdir,
        tags=tag,
        note=note,
        submitter=os.environ.get("NVQ_SUBMITTER", ""),
        after=_ids(after, "--after"),
        after_any=_ids(after_any, "--after-any"),
        **policy_options(retries=retries, cuda=cuda, memory=memory, lane=lane, array=array),
        email_on_success=email_on_success,
        email_on_failure=email_on_failure,
        max_runtime=_duration(max_runtime, "--max-runtime"),
        no_reassign=no_reassign,
    )
    if spec.max_runtime is not None and spec.max_runtime <= 0:
        raise CliError("--max-runtime must be positive", 2)
    if manifest is not None:
        from nvq.cli.ops import with_manifest

        spec = with_manifest(spec, manifest, ctx)
    job = call(c.Submit(spec=spec)).data
    if not wait:
        emit(job, as_json, f"submitted job {job['id']} ({job['name']})")
        return 0
    if not as_json:
        print(f"submitted job {job['id']} ({job['name']}); waiting", file=sys.stderr)
    done = call(c.Wait(ids=[job["id"]]))
    (final,) = done.data
    emit(final, as_json, f"job {final['id']} {final['state']}" + _exit_text(final))
    return done.exit_code


def _exit_text(job: dict[str, Any]) -> str:
    if job.get("reason"):
        return f": {job['reason']}"
    return ""


@job_app.command("ls")
def job_ls(
    active: bool = typer.Option(False, "--active", help="Pending and running only."),
    held: bool = typer.Option(False, "--held", help="Held jobs only."),
    state: list[str] = typer.Option([], "--state", help="Only jobs in this state (repeatable)."),
    limit: int = typer.Option(None, "--limit", help="The newest N jobs."),
    array: int = typer.Option(None, "--array", help="Members of this array."),
    as_json: bool = JsonOpt,
) -> int:
    """List jobs."""
    states = [*state, "held"] if held else state
    request = c.ListJobs(active=active, states=states or None, limit=limit, array=array)
    jobs = call(request).data
    emit(jobs, as_json, render.jobs_table(jobs))
    return 0


@job_app.command("show")
def job_show(
    job_id: int = typer.Argument(..., help="Job id."),
    logs: int = typer.Option(0, "--logs", help="Include the last N lines of its output."),
    as_json: bool = JsonOpt,
) -> int:
    """One job in full, with its events."""
    doc = call(c.ShowJob(id=job_id, logs=logs)).data
    emit(doc, as_json, render.job_detail(doc))
    return 0


@job_app.command("logs")
def job_logs(
    job_id: int = typer.Argument(..., help="Job id."),
    lines: int = typer.Option(50, "-n", "--lines", help="Last N lines (-1 for all)."),
    follow: bool = typer.Option(False, "-f", "--follow", help="Keep printing until it ends."),
    stderr: bool = typer.Option(False, "--stderr", help="Its stderr instead of stdout."),
    as_json: bool = JsonOpt,
) -> int:
    """A job's output."""
    request = c.Logs(id=job_id, lines=lines, follow=follow, stream="stderr" if stderr else "stdout")
    collected: list[bytes] = []
    for reply in exchange(request):
        if isinstance(reply, c.Chunk):
            if as_json:
                collected.append(reply.data)
            else:
                sys.stdout.buffer.write(reply.data)
                sys.stdout.buffer.flush()
        elif reply.error is not None:
            raise CliError(reply.error, reply.exit_code or 1)
    if as_json:
        emit(
            {
                "id": job_id,
                "stream": request.stream,
                "text": b"".join(collected).decode(errors="replace"),
            },
            True,
        )
    return 0


@job_app.command("wait")
def job_wait(
    job_ids: list[int] = typer.Argument(..., help="Job ids."),
    timeout: str = typer.Option(None, "--timeout", help="Give up after this long (exit 2)."),
    as_json: bool = JsonOpt,
) -> int:
    """Block until jobs end: exit 0 all completed, 1 one ended badly, 2 timed out waiting."""
    done = call(c.Wait(ids=job_ids, timeout=_duration(timeout, "--timeout")))
    jobs = done.data
    text = "\n".join(f"job {j['id']} {j['state']}{_exit_text(j)}" for j in jobs)
    if done.exit_code == 2:
        text += "\n(still going: --timeout ran out)"
    emit({"jobs": jobs, "exit_code": done.exit_code}, as_json, text)
    return done.exit_code


@job_app.command("cancel")
def job_cancel(
    job_ids: list[int] = typer.Argument(..., help="Job ids."),
    array: bool = typer.Option(
        False, "--array", help="The ids are arrays: cancel members not yet running."
    ),
    as_json: bool = JsonOpt,
) -> int:
    """Cancel jobs; a running one's process group is killed."""
    jobs = call(c.Cancel(ids=job_ids, array=array)).data
    emit(jobs, as_json, "\n".join(f"job {j['id']} cancelled" for j in jobs))
    return 0


@job_app.command("release")
def job_release(
    job_ids: list[int] = typer.Argument(..., help="Held job ids."),
    as_json: bool = JsonOpt,
) -> int:
    """Run held jobs without the prerequisites that ended badly."""
    jobs = call(c.Release(ids=job_ids)).data
    emit(jobs, as_json, "\n".join(f"job {j['id']} released" for j in jobs))
    return 0


@job_app.command("note")
def job_note(
    job_id: int = typer.Argument(..., help="Job id."),
    text: str = typer.Argument(None, help="Replace the note with this."),
    append: str = typer.Option(None, "--append", help="Add a line to the note."),
    clear: bool = typer.Option(False, "--clear", help="Remove the note."),
    as_json: bool = JsonOpt,
) -> int:
    """Read or change a job's note."""
    if sum(x is not None and x is not False for x in (text, append, clear or None)) > 1:
        raise CliError("give one of TEXT, --append or --clear", 2)
    job = call(c.Note(id=job_id, text=text, append=append, clear=clear)).data
    emit(job, as_json, job["note"] or "(no note)")
    return 0


@job_app.command("result")
def job_result(
    job_id: int = typer.Argument(..., help="Job id."),
    set_json: str = typer.Option(None, "--set", help="Store this JSON as the result."),
    as_json: bool = JsonOpt,
) -> int:
    """A job's result.json payload (or set one)."""
    value = call(c.Result(id=job_id, set_json=set_json)).data
    if as_json:
        emit({"id": job_id, "result": value}, True)
    else:
        print(msgspec.json.encode(value).decode() if value is not None else "(no result)")
    return 0


# ---------------------------------------------------------------- queue


@queue_app.command("status")
def queue_status(as_json: bool = JsonOpt) -> int:
    """Nodes, GPUs, job counts and active jobs."""
    doc = call(c.Status()).data
    emit(doc, as_json, render.status_text(doc))
    return 0


@queue_app.command("nodes")
def queue_nodes(
    procs: bool = typer.Option(False, "--procs", help="Every process on every GPU."),
    include_ignored: bool = typer.Option(False, "--include-ignored", help="Ignored nodes too."),
    as_json: bool = JsonOpt,
) -> int:
    """Every GPU of every node: memory, utilisation, the queue's share, processes."""
    nodes = call(c.Nodes(procs=procs, include_ignored=include_ignored)).data
    emit(nodes, as_json, render.nodes_table(nodes, procs))
    return 0


def _node_flag(node: str, flag: str, value: bool, as_json: bool, said: str) -> int:
    view = call(c.NodeFlag(node=node, flag=flag, value=value)).data  # type: ignore[arg-type]
    emit(view, as_json, f"node {view['name']} {said}")
    return 0


@queue_app.command("drain")
def queue_drain(
    node: str = typer.Argument(..., help="Node name (prefix)."), as_json: bool = JsonOpt
) -> int:
    """Place nothing new on a node; its running jobs finish and report back."""
    return _node_flag(node, "drained", True, as_json, "draining")


@queue_app.command("resume")
def queue_resume(
    node: str = typer.Argument(..., help="Node name (prefix)."), as_json: bool = JsonOpt
) -> int:
    """Undo drain."""
    return _node_flag(node, "drained", False, as_json, "accepting jobs")


@queue_app.command("ignore")
def queue_ignore(
    node: str = typer.Argument(..., help="Node name (prefix)."), as_json: bool = JsonOpt
) -> int:
    """Stop probing and scheduling a node and hide it (refused while it runs jobs)."""
    return _node_flag(node, "ignored", True, as_json, "ignored")


@queue_app.command("unignore")
def queue_unignore(
    node: str = typer.Argument(..., help="Node name (prefix)."), as_json: bool = JsonOpt
) -> int:
    """Undo ignore."""
    return _node_flag(node, "ignored", False, as_json, "back")


@queue_app.command("events")
def queue_events(
    since: int = typer.Option(0, "--since", help="Events after this id."),
    limit: int = typer.Option(None, "--limit", help="At most N events."),
    job: int = typer.Option(None, "--job", help="Only this job's events."),
    as_json: bool = JsonOpt,
) -> int:
    """The event log, for catching up on what happened."""
    events = call(c.Events(since=since, limit=limit, job_id=job)).data
    emit(events, as_json, render.events_table(events))
    return 0


# ---------------------------------------------------------------- node


@node_app.command("bootstrap")
def node_bootstrap(
    node: str = typer.Argument(..., help="Node name (prefix)."),
    force: bool = typer.Option(False, "--force", help="Reinstall even when current."),
    as_json: bool = JsonOpt,
) -> int:
    """Install this version of the runner on a node (a venv under its home), over SFTP."""
    doc = call(c.Bootstrap(node=node, force=force)).data
    said = "installed" if doc["installed"] else "already current"
    text = (
        f"node {doc['node']}: runner {doc['version']} {said} ({doc['python']}, {doc['seconds']}s)"
    )
    if doc.get("note"):
        text += f"\n{doc['note']}"
    emit(doc, as_json, text)
    return 0


# ---------------------------------------------------------------- daemon


@daemon_app.callback()
def daemon_main(ctx: typer.Context) -> int:
    """Run the daemon in the foreground (it is started for you when needed)."""
    if ctx.invoked_subcommand is not None:
        return 0
    from nvq.daemon.main import run

    return run(nvq_home(), foreground=True)


@daemon_app.command("stop")
def daemon_stop(as_json: bool = JsonOpt) -> int:
    """Stop the daemon cleanly; jobs keep running on their nodes."""
    from nvq.home import Home

    home = nvq_home()
    pid = Home(home).read_pid()
    try:
        call(c.StopDaemon(), autostart=False)
    except CliError as exc:
        if "no daemon" in str(exc):
            emit({"stopped": False, "running": False}, as_json, "no daemon is running")
            return 0
        raise
    deadline = time.monotonic() + 20
    while pid is not None and time.monotonic() < deadline and _alive(pid):
        time.sleep(0.02)
    emit({"stopped": True, "pid": pid}, as_json, f"daemon {pid} stopped")
    return 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# Scheduling-policy commands (requeue, purge, edit, priority, pause, resume, lanes).
# Machines that come and go: job artifacts, queue busy, forbid/allow-busy-assign.
from nvq.cli import jobs_policy, machines_cmds  # noqa: E402, F401
from nvq.cli.jobs_policy import policy_options  # noqa: E402

# ---------------------------------------------------------------- operating the queue

_ops.register(app, queue_app)  # queue alerts/ack/backup/restore/keeper, project test


# ---------------------------------------------------------------- entry point


_GROUPS = {"job": job_app, "queue": queue_app, "node": node_app}


def _app_for(args: list[str]) -> typer.Typer:
    """An app holding only the command being run, when it is a plain `GROUP COMMAND`.

    typer turns every registered function's signature into click parameters each
    time the app runs (about 1 ms a command, and nvq has dozens); a CLI call runs
    one command, so it need not pay for the others. Help and anything unusual go to
    the full app."""
    if len(args) < 2 or args[0] not in _GROUPS or args[1].startswith("-"):
        return app
    group = _GROUPS[args[0]]
    match = [c for c in group.registered_commands if c.name == args[1]]
    if len(match) != 1:
        return app
    narrow_group = typer.Typer(no_args_is_help=True)
    narrow_group.registered_commands = match
    narrow = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    narrow.add_typer(narrow_group, name=args[0])
    return narrow


def _wants_json(argv: list[str]) -> bool:
    head = argv[: argv.index("--")] if "--" in argv else argv
    return "--json" in head


def fail(message: str, code: int, as_json: bool) -> NoReturn:
    if as_json:
        emit({"error": message, "exit_code": code}, True)
    else:
        print(f"nvq: {message}", file=sys.stderr)
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = _wants_json(args)
    from nvq.config import ConfigError
    from nvq.remote import RemoteError, maybe_forward

    try:
        # [remote]: the whole argv runs on the queue host; --local opts out once.
        args, forwarded = maybe_forward(args, nvq_home())
    except (ConfigError, RemoteError) as exc:
        fail(str(exc), 2, as_json)
    except KeyboardInterrupt:
        sys.exit(130)
    if forwarded is not None:
        sys.exit(forwarded)
    try:
        result = _app_for(args)(args=args, prog_name="nvq", standalone_mode=False)
    except CliError as exc:
        fail(str(exc), exc.code, as_json)
    except click_exc.NoArgsIsHelpError as exc:
        print(exc.ctx.get_help() if exc.ctx else str(exc))
        sys.exit(0 if not args else 2)
    except click_exc.ClickException as exc:
        message = exc.format_message().strip().splitlines()
        fail(message[0] if message else type(exc).__name__, 2, as_json)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    sys.exit(result if isinstance(result, int) else 0)


if __name__ == "__main__":
    main()
