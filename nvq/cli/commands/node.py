"""`nvq node bootstrap|stop|start`: installing, stopping and starting a node's runner."""

from __future__ import annotations

import typer

from nvq.cli import reads
from nvq.cli.app import JsonOpt
from nvq.cli.params import CliError
from nvq.cli.render.output import emit
from nvq.client import Client, DaemonUnavailable

on_node = typer.Typer()  # attached to the `node` group in nvq.cli.commands


@on_node.command("bootstrap")
def node_bootstrap(
    node: str = typer.Argument(..., help="Node name (prefix)."),
    force: bool = typer.Option(False, "--force", help="Reinstall even when current."),
    as_json: bool = JsonOpt,
) -> int:
    """Install this version of the runner on a node (a venv under its home), over SFTP."""
    doc = Client().bootstrap(node, force=force)
    said = "installed" if doc.installed else "already current"
    text = f"node {doc.node}: runner {doc.version} {said} ({doc.python}, {doc.seconds}s)"
    if doc.note:
        text += f"\n{doc.note}"
    emit(doc, as_json, text)
    return 0


@on_node.command("stop")
def node_stop(
    node: str = typer.Argument(None, help="Node name (prefix)."),
    all_nodes: bool = typer.Option(False, "--all", help="Every node."),
    kill_jobs: bool = typer.Option(
        False, "--kill-jobs", help="Cancel the node's running jobs first."
    ),
    as_json: bool = JsonOpt,
) -> int:
    """Stop a node's runner; it stays stopped until `nvq node start NAME`.

    A node with running jobs is left running (its runner watches them) unless
    --kill-jobs cancels them first. A stopped node gets no jobs and no link (like
    an ignored one, shown as `stopped`) until `node start` brings its runner back."""
    if (node is None) == (not all_nodes):
        raise CliError("give a node name or --all", 2)
    # Stopping runners takes a daemon (it holds their links); one started for this
    # alone is stopped again, so `daemon stop` then `node stop --all` leaves nothing.
    was_running = daemon_running()
    doc = Client().node_stop(node, all=all_nodes, kill_jobs=kill_jobs)
    lines = [f"node {name}: runner stopped" for name in doc.stopped]
    lines += [f"node {left.node}: left running: {left.reason}" for left in doc.left]
    if not was_running:
        stop_daemon_again()
        lines.append("(no daemon was running: one was started for this and stopped again)")
    emit(doc, as_json, "\n".join(lines) or "no node to stop")
    return 0


@on_node.command("add")
def node_add(
    name: str = typer.Argument(..., help="The node's name in the queue."),
    host: str = typer.Option(..., "--host", help="Host name or address to SSH to."),
    user: str = typer.Option(None, "--user", help="SSH user (default: yours)."),
    port: int = typer.Option(None, "--port", help="SSH port (default 22)."),
    identity: str = typer.Option(None, "--identity", help="Private key file."),
    known_hosts: str = typer.Option(None, "--known-hosts", help="known_hosts file."),
    home: str = typer.Option(None, "--home", help="The runner's home there (~/.nvq)."),
    python: str = typer.Option(None, "--python", help="Your own interpreter there."),
    env: list[str] = typer.Option([], "--env", help="KEY=VALUE for its runner, repeatable."),
    as_json: bool = JsonOpt,
) -> int:
    """Append a [[nodes]] table to config.toml (checked first; the file's comments
    stay) and reload the daemon, which connects to the node."""
    from nvq.cli.commands.daemon import reload_text
    from nvq.config import ConfigError
    from nvq.config.append import append_node
    from nvq.home import default_root

    pairs = dict(item.partition("=")[::2] for item in env)
    if any("=" not in item or not item.partition("=")[0] for item in env):
        raise CliError("--env takes KEY=VALUE", 2)
    fields: dict[str, object] = {
        "host": host, "port": port, "user": user, "identity": identity,
        "known_hosts": known_hosts, "home": home, "python": python,
    }
    try:
        table = append_node(default_root() / "config.toml", name, fields, pairs)
    except ConfigError as exc:
        raise CliError(str(exc), 2) from None
    try:
        doc = Client(autostart=False).reload()
    except DaemonUnavailable:
        emit({"applied": [], "refused": []}, as_json,
             f"added to config.toml:\n{table}(no daemon is running: it connects at start)")
        return 0
    emit(doc, as_json, reload_text(doc))
    return 0


@on_node.command("health")
def node_health(
    node: str = typer.Argument(None, help="Node name (prefix); every node without."),
    as_json: bool = JsonOpt,
) -> int:
    """Each card's health: ok, unhealthy (with its evidence) or drained, since when.

    An unhealthy or drained card takes no new job until an admin runs
    `nvq queue resume NODE:IDX`; `nvq queue drain NODE:IDX` takes one out by hand."""
    return reads.node_health(node, as_json)


@on_node.command("status")
def node_status(
    node: str = typer.Argument(..., help="Node name (prefix)."),
    as_json: bool = JsonOpt,
) -> int:
    """Is the node's runner up: pid, version, uptime, jobs, journal position, last error."""
    return reads.node_status(node, as_json)


@on_node.command("restart")
def node_restart(
    node: str = typer.Argument(..., help="Node name (prefix)."),
    as_json: bool = JsonOpt,
) -> int:
    """Restart a node's runner; its running jobs are not touched (the new one adopts them)."""
    from nvq.cli.render.ops import runner_text

    doc = Client().node_restart(node)
    emit(doc, as_json, "restarted: " + runner_text(doc))
    return 0


@on_node.command("start")
def node_start(
    node: str = typer.Argument(..., help="Node name (prefix)."),
    as_json: bool = JsonOpt,
) -> int:
    """Start a stopped node's runner again (the daemon reconnects to it)."""
    view = Client().node_flag(node, "ignored", False)
    emit(view, as_json, f"node {view.name}: starting its runner")
    return 0


def daemon_running() -> bool:
    from nvq.client.autostart import connect_unix
    from nvq.client.errors import ClientError
    from nvq.home import Home, default_root

    try:
        connect_unix(Home(default_root()).socket).close()
    except (OSError, ClientError):
        return False  # not there, or not ours to reach: the stop itself will say so
    return True


def stop_daemon_again() -> None:
    from nvq.cli.daemon_exit import wait_gone
    from nvq.client.errors import DaemonUnavailable
    from nvq.home import Home, default_root

    pid = Home(default_root()).read_pid()
    try:
        Client(autostart=False).stop_daemon()
    except DaemonUnavailable:
        return
    wait_gone(pid)
