"""The resident runner: one Unix socket, one daemon connection at a time, the job
manager, the journal and the sampler, all on one asyncio loop. A new connection
replaces the old one (a daemon reconnecting after a half-dead SSH link must win). Each
connection gets `Hello`, then every unacknowledged journaled event in seq order, then
live traffic, all written in one synchronous step: nothing live overtakes the replay."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
from collections.abc import Callable
from functools import partial
from pathlib import Path

from . import __version__, container, owner, procfs, recovery, write_order
from . import protocol as p
from .allocation import allocated_gpus
from .artifacts import manifest
from .blobcache import BlobCache
from .blobfetch import BlobFetcher
from .conn import Conn
from .gpu import GpuBackend, GpuFacts, Watched, open_backend
from .identity import QueueMemory
from .image_stage import ImageStager
from .job_artifacts import JobArtifacts
from .job_socket import JobSockets
from .jobfiles import JobDir
from .jobs import JobManager
from .jobworld import JobWorld
from .journal import Journal
from .lease import Lease, fence, keep
from .node_sample import take_sample
from .outframes import fit_event
from .sampling import worth_sending
from .tail import tail

log = logging.getLogger("nvq_runner")
SOCKET = "runner.sock"
JOURNAL_RETRY = 1.0  # seconds between tries to journal held events


class Runner:
    def __init__(self, home: Path, job_umask: int = 0o022) -> None:
        self.home = home
        self.conn: Conn | None = None
        self._wake = asyncio.Event()
        self._last_sent: p.Sample | None = None  # and on which connection (a new daemon
        self._sampled_for: Conn | None = None  # gets a sample at once)
        self._stop = asyncio.Event()
        self.interval = _float_env("NVQ_SAMPLE_INTERVAL", 2.0)
        self.backend: GpuBackend = Watched(open_backend(os.environ), os.environ)
        self._facts = GpuFacts()
        self.journal = Journal(home / "journal")
        self._held: list[p.JournaledEvent] = []  # made but not yet journaled, in seq order
        self._retry: asyncio.TimerHandle | None = None
        self.queue = QueueMemory(home)
        self.fetcher = BlobFetcher(BlobCache(home / "cache"), self._send_now)
        self.job_artifacts = JobArtifacts(self.fetcher)
        self.world = JobWorld(home, self.fetcher.cache, self.fetcher, self.job_artifacts)
        self.jobs = JobManager(home, self._record, self._wake.set, job_umask, self.world)
        self.jobs.sockets = JobSockets(self._send_now)  # jobs' $NVQ_SOCKET, relayed
        self.images = ImageStager(home, self.fetcher.cache, self.fetcher, self._send_now)
        self.world.on_image_loaded = self.images.report
        self.owner: p.Owner | None = None  # set by the daemon on each connection
        self.lease = Lease()
        self._busy: p.Busy | None = None  # last reported

    # ------------------------------------------------------------ events

    def _record(self, build: Callable[[int], p.JournaledEvent]) -> None:
        """Journal (durably) and then send one event."""
        seq = (self._held[-1].seq if self._held else self.journal.head) + 1
        self._held.append(fit_event(build(seq)))
        self._journal_held()

    def _journal_held(self) -> None:
        """Journal and send held events in seq order. An event the journal cannot
        write (disk full) is never sent: it waits in memory, with those after it, and
        is retried every second; until then the daemon learns nothing it could lose."""
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None
        while self._held:
            event = self._held[0]
            try:
                self.journal.append(event)
            except OSError as exc:
                log.error("journal write failed (%s); holding %d event(s) from seq %s",
                          exc, len(self._held), event.seq)
                if self._retry is None:
                    self._retry = asyncio.get_running_loop().call_later(
                        JOURNAL_RETRY, self._journal_held)
                return
            self._held.pop(0)
            log.debug("event %s", event)
            if self.conn is not None:
                self.conn.send(event)

    def _send_now(self, msg: p.RunnerMsg) -> bool:
        """Send an unjournaled frame; False when no daemon is connected."""
        if self.conn is None or self.conn.closed:
            return False
        self.conn.send(msg)
        return not self.conn.closed

    def facts(self) -> GpuFacts:
        try:
            self._facts = self.backend.facts()
        except Exception as exc:  # a fake gpus.toml mid-edit: keep the last good facts
            log.warning("GPU facts unavailable: %s", exc)
        return self._facts

    def hello(self) -> p.Hello:
        facts = self.facts()
        return p.Hello(
            hostname=socket.gethostname(),
            runner_version=__version__,
            protocol=p.PROTOCOL_VERSION,
            backend=self.backend.name,
            cuda=facts.cuda,
            driver=facts.driver,
            mem_total_mb=procfs.meminfo_mb("MemTotal"),
            cpus=procfs.cpu_count(),
            gpus=facts.gpus,
            active=self.jobs.active(),
            journal_head=self.journal.head,
            boot_id=procfs.boot_id(), pid=os.getpid(),
            journal_id=self.journal.id,
            features=["owner", "world", "chunked_artifacts", "lease", "recover",
                      "relay", "inputs", "chunk_reads", "images"],
            queue_id=self.queue.mark.queue_id,
            max_job_id=self.queue.mark.max_job_id,
            allocated=allocated_gpus(os.environ, len(facts.gpus)),
            started_at=procfs.STARTED_AT, runtimes=container.found_runtimes(),
        )

    # ------------------------------------------------------------ connections

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.conn is not None:
            log.info("new daemon connection replaces the old one")
            self.conn.close()
        conn = Conn(reader, writer)
        self.conn = conn
        self.lease.renew()  # `attach` connects only for a daemon that reached us
        conn.send(self.hello())
        for event in self.journal.unacked():
            conn.send(event)
        self._wake.set()
        frames = p.FrameReader()
        try:
            while not conn.closed:
                data = await reader.read(65536)
                if not data:
                    break
                for payload in frames.feed(data):
                    if conn is self.conn:
                        self.lease.renew()
                    self._dispatch(conn, p.decode_daemon_payload(payload))
        except p.FrameError as exc:
            log.warning("dropping daemon connection: %s", exc)
        except ConnectionError:
            pass
        except asyncio.CancelledError:
            # Shutting down. Not re-raised: asyncio's stream server (3.11) logs a
            # cancelled handler task as an error.
            pass
        finally:
            conn.close()
            if self.conn is conn:
                self.conn = None
                self.fetcher.connection_lost()
                self.jobs.sockets.connection_lost()

    def _dispatch(self, conn: Conn, msg: p.DaemonMsg) -> None:
        try:
            if isinstance(msg, p.Start):
                self.queue.saw(msg.queue_id, msg.job_id)
                self.jobs.start(msg)
            elif isinstance(msg, p.Kill):
                self.jobs.kill(msg)
            elif isinstance(msg, p.Ack):
                self.journal.ack(msg.seq)
            elif isinstance(msg, p.Tail):
                self._tail(conn, msg)
            elif isinstance(msg, p.Unfollow):
                task = conn.tails.get(msg.req)
                if task is not None:
                    task.cancel()
            elif isinstance(msg, p.Sync):
                self._wake.set()
            elif isinstance(msg, p.ArtifactsQuery):
                asyncio.get_running_loop().create_task(self._artifacts(conn, msg))
            elif isinstance(msg, p.BlobData):
                self.fetcher.on_data(msg)
            elif isinstance(msg, (p.ArtifactsTreeQuery, p.ReadChunks)):
                asyncio.get_running_loop().create_task(self._artifacts_tree(conn, msg))
            elif isinstance(msg, p.RelayDown):
                self.jobs.sockets.on_down(msg)
            elif isinstance(msg, p.Heartbeat):
                self.lease.renew(msg.lease)
                if msg.seq:
                    conn.send(p.LeaseHeld(seq=msg.seq))
            elif isinstance(msg, p.RecoverQuery):
                asyncio.get_running_loop().create_task(self._recover(conn, msg))
            elif isinstance(msg, (p.StageImage, p.ListImages)):
                self.images.on_message(msg)
            elif isinstance(msg, p.Owner):
                self.owner = msg
                self._busy = None  # report afresh on this connection
                self._wake.set()
        except Exception:
            log.exception("handling %s failed", msg)

    def _tail(self, conn: Conn, msg: p.Tail) -> None:
        d = self.jobs.job_dir(msg.job_id)
        if not d.path.is_dir():
            conn.send(p.LogData(req=msg.req, eof=True, error=f"no job {msg.job_id} on this node"))
            return
        if msg.stream == "both":
            self._tail_both(conn, msg, d)
            return
        path = d.attempt_log(msg.stream, msg.attempt)
        if path is None:
            error = f"no log of attempt {msg.attempt} of job {msg.job_id} on this node"
            conn.send(p.LogData(req=msg.req, eof=True, error=error))
            return
        run = self.jobs.running.get(msg.job_id)
        if run is not None and msg.attempt not in (None, run.rec.attempt):
            run = None  # an earlier attempt's log: it grows no more
        ended = run.ended if (run is not None and msg.follow) else None
        task = asyncio.create_task(
            tail(path, msg.req, msg.lines, ended, conn.send_log, msg.max_bytes, msg.offset))
        conn.tails[msg.req] = task
        task.add_done_callback(lambda t: conn.tails.pop(msg.req, None))

    def _tail_both(self, conn: Conn, msg: p.Tail, d: JobDir) -> None:
        run = self.jobs.running.get(msg.job_id)
        attempt = msg.attempt if msg.attempt is not None else (run.rec.attempt if run else None)
        run = run if run is not None and attempt == run.rec.attempt else None
        logs = {s: d.log(s) if run else d.attempt_log(s, msg.attempt) for s in write_order.STREAMS}
        if attempt is None:
            rec = d.read_record()
            attempt = rec.attempt if rec is not None else None
        if attempt is None or logs["stdout"] is None or logs["stderr"] is None:
            error = f"no log of attempt {msg.attempt} of job {msg.job_id} on this node"
            conn.send(p.LogData(req=msg.req, eof=True, error=error))
            return
        ended = run.ended if (run is not None and msg.follow) else None
        drained = self.jobs.order.drained(d.path, attempt)
        offsets = {"stdout": msg.offset or 0, "stderr": msg.err_offset or 0}
        task = asyncio.create_task(write_order.merged_tail(
            {s: path for s, path in logs.items() if path is not None},
            write_order.order_path(d.path, attempt), msg.req, offsets, ended, drained,
            conn.send_log))
        conn.tails[msg.req] = task
        task.add_done_callback(lambda t: conn.tails.pop(msg.req, None))

    async def _artifacts(self, conn: Conn, msg: p.ArtifactsQuery) -> None:
        root = self.jobs.job_dir(msg.job_id).artifacts
        try:
            files = await asyncio.to_thread(manifest, root)
            conn.send(p.ArtifactsManifest(req=msg.req, job_id=msg.job_id, files=files,
                                        root=str(root.absolute())))
        except OSError as exc:
            conn.send(p.ArtifactsManifest(req=msg.req, job_id=msg.job_id, error=str(exc)))

    async def _recover(self, conn: Conn, msg: p.RecoverQuery) -> None:
        running = [(r.rec.job_id, r.rec.attempt) for r in self.jobs.running.values()]
        found = await asyncio.to_thread(
            recovery.records, self.jobs.root, msg.job_ids, msg.queue_id, running)
        conn.send(p.Recovered(req=msg.req, records=found))

    async def _artifacts_tree(self, conn: Conn, msg: p.ArtifactsTreeQuery | p.ReadChunks) -> None:
        directory = self.jobs.job_dir(msg.job_id).artifacts
        reply = self.job_artifacts.read(msg, directory) if isinstance(msg, p.ReadChunks) \
            else self.job_artifacts.describe(msg, directory)
        conn.send(await reply)

    async def _sync_requests(self, conn: Conn) -> None:
        """Jobs that touched `$NVQ_ARTIFACTS/.sync`: the daemon syncs them now."""
        runs = list(self.jobs.running.values())
        wanted = await asyncio.to_thread(
            lambda: [r for r in runs if JobArtifacts.sync_wanted(r.dir.artifacts)])
        for run in wanted:
            conn.send(p.SyncWanted(job_id=run.rec.job_id, attempt=run.rec.attempt))

    def _report_busy(self) -> None:
        """Tell the daemon when the owner's activity changes (checked every sample)."""
        if self.owner is None or self.conn is None:
            return
        if self.owner.user is None:
            now = p.Busy(busy=False)
        else:
            act = owner.activity(self.owner.user, self.owner.idle)
            now = p.Busy(busy=act.busy, sessions=act.sessions, idle=act.idle)
        if self._busy is None or now.busy != self._busy.busy:
            self._busy = now
            self.conn.send(now)

    # ------------------------------------------------------------ sampling

    async def _sampler(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self.interval)
            self._wake.clear()
            if self.conn is None:
                continue
            try:
                self._report_busy()
            except Exception as exc:
                log.warning("owner activity check failed: %s", exc)
            sessions = self.jobs.sessions()
            status_files = {job: r.dir for job, r in self.jobs.running.items()}
            try:
                sample = await asyncio.to_thread(
                    take_sample, self.backend, sessions, status_files
                )
            except Exception as exc:
                log.warning("sample failed: %s", exc)
                continue
            conn = self.conn
            if conn is not None and (
                conn is not self._sampled_for or worth_sending(self._last_sent, sample)
            ):
                conn.send(sample)
                self._last_sent, self._sampled_for = sample, conn
            if conn is not None:
                try:
                    await self._sync_requests(conn)
                except Exception as exc:
                    log.warning("artifacts sync request check failed: %s", exc)

    async def _log_keeper(self) -> None:
        interval = _float_env("NVQ_LOG_CHECK_INTERVAL", 5.0)
        while True:
            await asyncio.sleep(interval)
            try:
                await self.jobs.cap_logs()
            except Exception:
                log.exception("log size check failed")

    # ------------------------------------------------------------ lifetime

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._stop.set)
        journaled = {
            (str(type(e).__struct_config__.tag), e.job_id, e.attempt)
            for e in self.journal.unacked()
        }
        # A runner killed with artifacts mounted left them dead ("Transport endpoint
        # is not connected"): take them down before anything looks at job dirs.
        await asyncio.to_thread(JobArtifacts.clean_stale, self.jobs.root)
        self.jobs.adopt_all(journaled)
        await asyncio.gather(*(self.job_artifacts.remount(job_id, run.dir.artifacts)
                               for job_id, run in list(self.jobs.running.items())))
        self.world.inputs.remount_all({i: r.dir.inputs for i, r in self.jobs.running.items()})
        # Bound relative to the home (our cwd): socket paths are limited to ~107 bytes.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(SOCKET)
        # Made under the runner's umask 077, so it is never open to others.
        server = await asyncio.start_unix_server(self._on_connect, path=SOCKET)
        os.chmod(SOCKET, 0o600)
        sampler = asyncio.create_task(self._sampler())
        log_keeper = asyncio.create_task(self._log_keeper())
        lease_keeper = asyncio.create_task(
            keep(self.lease, partial(fence, self.jobs, self._record)))
        log.info("runner %s serving on %s (backend %s)",
                 os.getpid(), self.home / SOCKET, self.backend.name)
        try:
            await self._stop.wait()
        finally:
            log.info("runner stopping; jobs keep running")
            if self._held:
                log.error("stopping with %d event(s) never journaled", len(self._held))
            for task in (sampler, log_keeper, lease_keeper):
                task.cancel()
            server.close()
            if self.conn is not None:
                self.conn.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(SOCKET)
            self.jobs.close()
            self.journal.close()
            self.queue.flush()
            self.backend.close()


def _float_env(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default
