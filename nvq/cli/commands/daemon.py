"""`nvq daemon [stop]`: the daemon in the foreground, and stopping it cleanly."""

from __future__ import annotations

from pathlib import Path

import typer

from nvq.cli.app import JsonOpt
from nvq.cli.daemon_exit import wait_gone
from nvq.cli.render.output import emit
from nvq.client import Client, ClientError, DaemonUnavailable, stop_mark
from nvq.client.autostart import start_daemon, wait_answering
from nvq.control import Reloaded
from nvq.home import Home, default_root, owns_home
from nvq.values import format_duration

on_daemon = typer.Typer()  # attached to the `daemon` group in nvq.cli.commands


@on_daemon.callback()
def daemon_main(ctx: typer.Context) -> int:
    """Run the daemon in the foreground (it is started for you when needed)."""
    if ctx.invoked_subcommand is not None:
        return 0
    from nvq.daemon.main import run

    return run(default_root(), foreground=True)


@on_daemon.command("stop")
def daemon_stop(as_json: bool = JsonOpt) -> int:
    """Stop the daemon cleanly; jobs keep running on their nodes.

    So do the node runners that watch them: it says how many it left; `nvq node
    stop --all` stops those with no running jobs."""
    root = default_root()
    pid = Home(root).read_pid()
    # First, so that no observer (web, TUI, events --follow, MCP reads) that finds it
    # gone starts it again meanwhile; a member (who may not write the owner's home)
    # leaves it to the daemon, which marks a stop it allowed before it goes.
    mine = owns_home(root)
    if mine:
        stop_mark.leave(root, pid)
    try:
        said = Client(autostart=False).stop_daemon()
    except DaemonUnavailable:
        emit({"stopped": False, "running": False}, as_json, "no daemon is running")
        return 0
    except ClientError:
        if mine:
            stop_mark.clear(root)  # refused: it runs on
        raise
    wait_gone(pid)
    text = f"daemon {pid} stopped"
    downtime = _downtime(root)
    if said.runners_left:
        why = (
            f"so that their {said.jobs_running} running job(s) go on for "
            f"{format_duration(downtime)} ([queue] max_downtime: start the daemon within it)"
            if said.jobs_running and downtime
            else f"so that their {said.jobs_running} running job(s) go on"
            if said.jobs_running
            else "ready for the next daemon"
        )
        text += (
            f"; {said.runners_left} node runner(s) left running, {why} "
            "(`nvq node stop --all` stops those without jobs)"
        )
    doc = {
        "stopped": True,
        "pid": pid,
        "runners_left": said.runners_left,
        "jobs_running": said.jobs_running,
    }
    emit(doc, as_json, text)
    return 0


def _downtime(root: Path) -> float | None:
    """The lease a stop grants runners (None: leases are off, or the config is gone)."""
    from nvq.config import ConfigError, load_config
    from nvq.config.lease import effective_lease

    try:
        queue = load_config(root).queue
    except ConfigError:
        return None
    lease = effective_lease(queue.lease, queue.node_grace, queue.kill_grace)
    return queue.max_downtime if lease is not None else None


@on_daemon.command("start")
def daemon_start(as_json: bool = JsonOpt) -> int:
    """Start the daemon (detached) if none runs, after `nvq daemon stop` too.

    A daemon stopped with `nvq daemon stop` stays stopped for the web page, the TUI,
    `queue events --follow`, MCP reads and the keeper; this, or any command that needs
    it, starts it again (through the keeper when one is installed)."""
    root = default_root()
    was = stop_mark.clear(root)
    try:
        pong = Client(root, autostart=False).ping()
        emit({"started": False, "pid": pong.pid}, as_json,
             f"daemon {pong.pid} is already running")
        return 0
    except DaemonUnavailable:
        pass
    from nvq.keeper import start_kept

    if start_kept(root):
        wait_answering(root)  # the keeper's daemon, so that a crash of it is restarted
    else:
        start_daemon(root)
    pid = Home(root).read_pid()
    text = f"daemon {pid} started" + (f" (it was {was})" if was else "")
    emit({"started": True, "pid": pid}, as_json, text)
    return 0


@on_daemon.command("reload")
def daemon_reload(as_json: bool = JsonOpt) -> int:
    """Re-read config.toml and apply what changed, without stopping jobs (as SIGHUP).

    Nodes added are connected; nodes removed are drained (their running jobs finish,
    then the node goes); a node whose host, port, user, ... changed is reconnected;
    limits, users and notify apply at once. A change that needs a restart is named,
    and the running value kept. A config.toml that does not load changes nothing."""
    try:
        doc = Client(autostart=False).reload()
    except DaemonUnavailable:
        emit({"applied": [], "refused": []}, as_json,
             "no daemon is running (it reads config.toml when it starts)")
        return 0
    emit(doc, as_json, reload_text(doc))
    return 0


def reload_text(doc: Reloaded) -> str:
    lines = [f"applied: {line}" for line in doc.applied]
    lines += [f"not applied: {line}" for line in doc.refused]
    return "\n".join(lines) or "config.toml: nothing changed"

