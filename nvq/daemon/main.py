"""`nvq daemon`: the process that owns queue.db and talks to every node.

Wiring: the state (`core/state.py`), the services built on it, each handed what it
uses here and nowhere else (placement's memory and inputs, the artifact queue, the
output copier, the pilots, the runner side, the relay), and one anyio task group:
the control server, the placement loop, one link per node.
`nvq daemon stop` (or SIGTERM) grants every runner it reaches a lease of
`[queue] max_downtime`, then cancels it; runners and their jobs keep going.
"""

from __future__ import annotations

import logging
import os
import signal
import sqlite3
import sys
from pathlib import Path

import anyio
from anyio.abc import ByteStream

from nvq.config import Config, ConfigError, load_config
from nvq.daemon.artifacts.artifact_syncs import ArtifactSyncs
from nvq.daemon.artifacts.artifacts import Artifacts
from nvq.daemon.artifacts.runner_messages import ArtifactMessages
from nvq.daemon.artifacts.whole_file_conversion import convert_stored
from nvq.daemon.core.disk_space import watch_disk
from nvq.daemon.core.errors import RequestError
from nvq.daemon.core.nodes import NodeRuntime
from nvq.daemon.core.state import State
from nvq.daemon.handlers.context import Context
from nvq.daemon.machines import lease_grants
from nvq.daemon.machines.contention_watch import ContentionWatch
from nvq.daemon.machines.gpu_history import keep_history
from nvq.daemon.machines.links import Links
from nvq.daemon.machines.reassign import Reassigner
from nvq.daemon.machines.reload import Reloader
from nvq.daemon.machines.runner_events import RunnerEvents
from nvq.daemon.machines.time_limits import warn_time_limits
from nvq.daemon.ops import Ops
from nvq.daemon.output.output_copies import OutputCopies
from nvq.daemon.placement.memory import Memory
from nvq.daemon.placement.placing import placement_loop
from nvq.daemon.serve.control_server import refuse_relayed, serve_control, serve_relayed
from nvq.daemon.sessions.relay import Relays
from nvq.daemon.ssh.byte_channel import ByteChannel, Opener
from nvq.home import AlreadyRunning, Home, socket_path_problem
from nvq.home_root import PRIVATE_UMASK
from nvq.store import Store, StoreError, store_error

log = logging.getLogger("nvq.daemon")


def _local_opener(config: Config, node: NodeRuntime, home: Path) -> Opener:
    from nvq.daemon.machines.runner_stop import local_runner_home
    from nvq_runner.launcher import ensure_running

    queue = config.queue
    runner_home = local_runner_home(config, home)
    env = {**os.environ, **queue.local_env}

    async def open_channel() -> ByteChannel:
        sock = await anyio.to_thread.run_sync(lambda: ensure_running(runner_home, env))
        return await anyio.connect_unix(sock)

    return open_channel


def _ssh_opener(state: State, node: NodeRuntime) -> Opener:
    """Opens with the node's config as it is at each connect (a reload may change it);
    the opener made for a config is kept while it lasts (it installs the runner once)."""
    from nvq.daemon.ssh.opener import ssh_opener

    made: list[tuple[object, Opener]] = []

    async def open_channel() -> ByteChannel:
        assert node.config is not None
        key = (node.config, state.config.queue)
        if not made or made[0][0] != key:
            made[:] = [(key, ssh_opener(node.config, state.config.queue))]
        return await made[0][1]()

    return open_channel


async def serve(home: Path) -> None:
    config = load_config(home)
    store = await Store.open(Home(home).db)
    ops = Ops(config, store, home)  # alerts and notifications ride on every commit
    state = State(config, store, home, hooks=ops)
    artifacts = Artifacts(state)
    syncs = ArtifactSyncs(state, artifacts)  # the artifact work queue
    copies = OutputCopies(state)
    contention = ContentionWatch(state)  # what shared each running attempt's cards
    # a commit's starts and ended attempts, its changed jobs, its ended attempts' records
    state.follow(syncs, copies, contention)
    pilots = None
    if config.clusters:
        from nvq.daemon.machines.pilots import DaemonPilots

        pilots = DaemonPilots(state)
    machines = Reassigner(state, syncs, pilots)  # also placement's inputs
    memory = Memory()  # placement's own, between passes
    relays = Relays(state)  # jobs' own requests, relayed from $NVQ_SOCKET
    runner_events = RunnerEvents(
        state, machines, ArtifactMessages(artifacts, syncs), relays, contention
    )
    try:
        try:
            await state.load()
            await machines.load()
            await lease_grants.load(state)  # what an earlier daemon promised runners
            await convert_stored(state)  # once: an older queue's whole-file artifacts
        except sqlite3.Error as exc:
            # A file damaged past its header is found only here, reading the jobs.
            error = store_error(Home(home).db, exc)
            if error is None:
                raise
            raise error from None
        async with anyio.create_task_group() as tg:
            links = Links(tg, runner_events, lambda node: (
                _local_opener(config, node, home) if node.config is None
                else _ssh_opener(state, node)))
            reloader = Reloader(state, ops, links, home, memory, pilots)
            ctx = Context(state, machines, ops, memory, artifacts, syncs, reloader)

            async def serve_relay(stream: ByteStream, user: str) -> None:
                await serve_relayed(ctx, stream, user)

            # before any link delivers one
            await tg.start(relays.run, serve_relay, refuse_relayed)
            await tg.start(
                serve_control,
                ctx,
                Home(home).socket,
                config.queue.members_group,
            )
            tg.start_soon(placement_loop, state, memory, machines)
            tg.start_soon(syncs.run)  # artifact syncs
            tg.start_soon(machines.run)  # --max-runtime
            tg.start_soon(state.later.run)  # writes left waiting for disk space
            tg.start_soon(ops.notifier.run)  # woken by commits that owe deliveries
            tg.start_soon(ops.backup_loop)  # [queue.backup] enabled
            tg.start_soon(keep_history, state, pilots)  # the Nodes page's chart
            tg.start_soon(copies.run)  # every attempt's output, copied to this host
            tg.start_soon(warn_time_limits, state)  # 80 % of a --timeout: an event
            if pilots is not None:
                tg.start_soon(pilots.run, runner_events)  # [[clusters]]: a manager each
            tg.start_soon(watch_disk, state)  # a full disk shown, and alerted once over
            tg.start_soon(runner_events.watch_down)  # reassignment when the lease rule allows
            tg.start_soon(lease_grants.keep, state)  # granted leases, kept in queue.db
            for node in state.nodes.values():
                links.start(node)

            async def stop_on_signal() -> None:
                hup, stop = signal.SIGHUP, (signal.SIGTERM, signal.SIGINT)
                with anyio.open_signal_receiver(hup, *stop) as signals:
                    async for signum in signals:
                        if signum == hup:  # re-read config.toml, as `daemon reload`
                            try:
                                await reloader.reload()
                            except RequestError as exc:
                                log.error("SIGHUP: %s", exc)
                            except Exception:  # a reload's bug must not end the daemon
                                log.exception("SIGHUP: reload failed")
                            continue
                        log.info("got signal %d: stopping", signum)
                        state.stop_requested.set()
                        return

            tg.start_soon(stop_on_signal)
            log.info("daemon %d serving %s", os.getpid(), home)
            state.kick()
            await state.stop_requested.wait()
            # A planned stop (`daemon stop`, SIGTERM from a service manager or a
            # reboot): runners first get a lease that outlasts the downtime.
            try:
                await lease_grants.grant_downtime(state)
            except Exception:
                log.exception("granting the downtime lease failed")
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await store.close()
        Home(home).socket.unlink(missing_ok=True)
        log.info("daemon stopped")


def setup_logging(home: Path, foreground: bool) -> None:
    handlers: list[logging.Handler] = [logging.FileHandler(Home(home).log)]
    if foreground:
        handlers.append(logging.StreamHandler(sys.stderr))
    level = os.environ.get("NVQ_LOG_LEVEL", "INFO").upper()
    logging.basicConfig(
        level=level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        handlers=handlers,
    )
    # asyncssh says INFO for every channel and connection (most of daemon.log, and
    # nothing a user acts on); its warnings stay, and NVQ_LOG_LEVEL=DEBUG shows all.
    if level != "DEBUG":
        logging.getLogger("asyncssh").setLevel(logging.WARNING)


def run(home: Path, *, foreground: bool = True) -> int:
    # First: every file and directory from here on is the owner's alone.
    os.umask(PRIVATE_UMASK)
    problem = socket_path_problem(Home(home).socket)
    if problem is not None:
        print(f"nvq: {problem}", file=sys.stderr)
        return 2
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        lock = Home(home).take_lock()
    except AlreadyRunning as exc:
        print(f"nvq: {exc}", file=sys.stderr)
        return 3
    try:
        config = load_config(home)  # fail fast, with the config's own message
    except ConfigError as exc:
        print(f"nvq: {exc}", file=sys.stderr)
        return 2
    Home(home).make_private(config.queue.members_group)
    Home(home).pid_file.write_text(f"{os.getpid()}\n")
    setup_logging(home, foreground)
    try:
        anyio.run(serve, home)
    except StoreError as exc:
        log.error("%s", exc)
        if not foreground:
            # The last line of daemon.log: what the CLI that started us shows.
            print(exc, file=sys.stderr, flush=True)
        return 1
    finally:
        Home(home).pid_file.unlink(missing_ok=True)
        lock.close()
    return 0


def main() -> None:
    """Entry point of the detached daemon the CLI starts: `python -m nvq.daemon.main HOME`."""
    home = Path(sys.argv[1])
    code = run(home, foreground=False)
    if code == 0 and Home(home).stopped_mark.exists():
        from nvq.keeper import EXIT_STOPPED

        code = EXIT_STOPPED  # stopped on purpose: a systemd keeper leaves it stopped
    sys.exit(code)


if __name__ == "__main__":
    main()
