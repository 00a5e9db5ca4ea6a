"""One task per cluster: keep the login connection, follow the pilots in squeue, and
apply the scaling decision. The daemon plugs in through `PilotHooks`; this module
knows nothing of the daemon's state.

Each pass (on `kick()`, or every `poll` seconds, faster while a pilot waits to
start) lists the cluster's pilots with squeue and then:

* a pilot seen running for the first time becomes a node (`hooks.pilot_started`,
  with an opener that attaches through srun); pilots of an earlier daemon life
  (ids in `known`) are adopted the same way;
* a pilot that left squeue, or stopped running, is a node that went away
  (`hooks.pilot_ended`): its jobs are reassigned like any other down node's;
* every pilot's state, pending reason and time left go to `hooks.pilot_status`;
* `scaling.decide` says how many to submit and which to scancel. A submission Slurm
  refuses raises one alert and blocks further requests until `retry()` or a changed
  table (`reconfigure()`, on `daemon reload`).
* a pilot that ends before its runner ever answered failed to start (`pilot_starts`,
  which also opens each pilot's one waiting attach step):
  requests back off, and after a few in a row one alert names the reason and they
  stop until `retry()`: a site's admins see a polite user, never an sbatch loop.

A login node that cannot be reached is retried with backoff. The pilots' links run
over it, so they drop and their nodes go down the ordinary way (with the queue's
node grace); their openers work again once the login connection is back.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import anyio
import asyncssh

from nvq.clusters.cluster_view import cluster_view
from nvq.clusters.config import ClusterConfig
from nvq.clusters.login import (
    SlurmError,
    SlurmLogin,
    SubmitRefused,
    connect_login,
    install_pilot_runner,
    login_node,
    pilot_node,
)
from nvq.clusters.pilot_ends import DRAINED, ENDED, released_why
from nvq.clusters.pilot_hooks import PilotHooks
from nvq.clusters.pilot_starts import PilotStarts
from nvq.clusters.scaling import PilotView, ScaleDecision, WaitingJob, decide, next_pass_in
from nvq.clusters.slurm import PilotStatus
from nvq.daemon.ssh import NodeUnreachable

log = logging.getLogger("nvq.clusters")

POLL_STEADY = 10.0  # seconds between squeue passes while nothing is about to change
POLL_STARTING = 1.0  # while a pilot waits to start: its first job waits for it
BACKOFF_MAX = 60.0


class PilotManager:
    def __init__(
        self,
        cluster: ClusterConfig,
        hooks: PilotHooks,
        *,
        known: set[str] | None = None,
        connect_timeout: float = 10.0,
        keepalive: float = 5.0,
        poll: float = POLL_STEADY,
        poll_starting: float = POLL_STARTING,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.cluster = cluster
        self.hooks = hooks
        self.known: set[str] = set(known or ())  # pilot ids this queue submitted
        self.started: set[str] = set()  # pilots handed to the daemon as nodes
        self.ended: set[str] = set()  # pilots whose end the daemon was told of
        self.statuses: dict[str, PilotStatus] = {}
        self.target: int | None = None  # `nvq cluster scale N`; 0 = drain
        self.refused: str | None = None  # Slurm's message while requests are blocked
        self.last: ScaleDecision | None = None
        self.login: SlurmLogin | None = None
        self.error: str | None = None  # why the login node is unreachable
        self._connect_timeout = connect_timeout
        self._keepalive = keepalive
        self._poll = poll
        self._poll_starting = poll_starting
        self._clock = clock
        self._wake = anyio.Event()
        self._idle: dict[str, float] = {}  # running pilots' idle_since, last pass
        self.waiting: list[WaitingJob] = []  # jobs only a pilot could take, last pass
        self.unshared: str | None = None  # why the pilots' home is not shared, once seen
        self.starts = PilotStarts()
        self._begun = 0  # passes begun and done, so a view can wait for a fresh one
        self._done = 0
        self._passed = anyio.Event()
        self._connection: anyio.CancelScope | None = None  # the login connection's task
        self._reinstall = False  # `python` or `home` changed: install the runner again

    # ---------------------------------------------------------- commands

    def kick(self) -> None:
        """Run a pass now (a job started waiting, a node freed up, a command came)."""
        self._wake.set()

    def scale(self, n: int | None) -> None:
        """Keep exactly `n` pilots (None: back to automatic scaling)."""
        self.target = None if n is None else max(0, min(n, self.cluster.max_pilots))
        self.kick()

    def drain(self) -> None:
        self.scale(0)

    def retry(self) -> None:
        """Lift the block a refused submission or failed starts set."""
        self.refused = None
        self.starts.reset()
        self.kick()

    def reconfigure(self, cluster: ClusterConfig) -> None:
        """A changed `[[clusters]]` table (`daemon reload`): its next pilots use it and
        the block on requests is lifted, as the refusal promised. A new way to reach
        the login node reconnects; a new `python` or `home` installs the runner again."""
        old, self.cluster = self.cluster, cluster
        reach = ("host", "port", "user", "identity", "known_hosts")
        if any(getattr(old, k) != getattr(cluster, k) for k in reach):
            if self._connection is not None:
                self._connection.cancel()
        elif (old.python, old.home) != (cluster.python, cluster.home):
            self._reinstall = True
        if self.login is not None:
            self.login.cluster = cluster
            self.login.node = login_node(cluster)
        self.retry()

    def runner_up(self, job_id: str) -> None:
        """The pilot's runner answered: it started, and counts as a node from now on."""
        self.starts.answered(job_id)

    def view(self) -> dict[str, Any]:
        """`nvq cluster status NAME` as a document."""
        return cluster_view(self, self._clock())

    # ---------------------------------------------------------- the task

    async def run(self) -> None:
        failures = 0
        while True:
            try:
                conn = await connect_login(
                    self.cluster,
                    connect_timeout=self._connect_timeout,
                    keepalive_interval=self._keepalive,
                )
            except NodeUnreachable as exc:
                await self._unreachable(str(exc))
            else:
                failures = 0
                scope = self._connection = anyio.CancelScope()
                try:
                    with scope:
                        await self._serve(conn)
                except (NodeUnreachable, asyncssh.Error, OSError) as exc:
                    await self._unreachable(str(exc))
                finally:
                    self._connection = None
                    self.login = None
                    conn.close()
                if scope.cancelled_caught:
                    continue  # reconfigured: reach the login node the new way now
            await self._sleep(min(BACKOFF_MAX, 0.5 * 2**failures))
            failures += 1

    async def _serve(self, conn: asyncssh.SSHClientConnection) -> None:
        login = SlurmLogin(self.cluster, conn)
        login.runner = await install_pilot_runner(conn, self.cluster)
        self.login = login
        self.error = None
        while True:
            self._begun += 1
            try:
                await self.step()
            finally:
                self._done += 1
                self._passed.set()
                self._passed = anyio.Event()
            await self._sleep(self._next_pass())

    async def refreshed(self, timeout: float) -> None:
        """Return after a pass that began now or later (squeue read after this call:
        `cluster status` right after an `scancel` shows it), or after `timeout`, or at
        once while the login node is not connected (the last view is all there is)."""
        want = self._begun + 1
        self.kick()
        with anyio.move_on_after(timeout):
            while self.login is not None and self._done < want:
                await self._passed.wait()

    def _next_pass(self) -> float:
        # A pilot submitted in this pass is not in `statuses` yet: it is starting too.
        starting = bool(self.known - self.statuses.keys()) or any(
            s.phase == "requested" for s in self.statuses.values()
        )
        quick, steady = self._poll_starting, self._poll
        if self.target is not None:
            return quick if starting else steady
        waiting = self.hooks.waiting_jobs(self.cluster)
        hold = self.starts.hold_until if self.waiting else 0.0
        return next_pass_in(
            self.cluster, self._clock(), waiting, list(self._idle.values()), hold,
            quick if starting else steady, quick,
        )

    async def _sleep(self, seconds: float) -> None:
        with anyio.move_on_after(seconds):
            await self._wake.wait()
        self._wake = anyio.Event()

    async def _unreachable(self, why: str) -> None:
        if self.error is None:
            log.warning("cluster %s: login node unreachable: %s", self.cluster.name, why)
        self.error = why

    async def check_home_shared(self, job_id: str) -> None:
        """Once a pilot's runner answers: does the login node see the pilot's home?
        Nothing needs it to (files travel over the pilot's link), but where it does not,
        compute nodes install the runner themselves: the log says so once per cluster."""
        if self.login is not None and self.unshared is None:
            home = self.starts.home(job_id, self.cluster)
            self.unshared = await self.login.unshared_note(job_id, home)
            if self.unshared is not None:
                log.warning("%s", self.unshared)

    async def refuse_pilot(self, job_id: str, why: str) -> None:
        """A pilot the daemon will not use (its runner is another version): give it
        back, alert once, and request no more until `retry()` — each new pilot would be
        refused the same way."""
        self.refused = why
        login = self.login
        if login is not None:
            try:
                await login.cancel([job_id])
            except SlurmError as exc:
                log.warning("cluster %s: %s", self.cluster.name, exc)
        await self.hooks.alert(
            self.cluster,
            f"cluster {self.cluster.name}: {why} (no more pilots until the config changes "
            f"or `nvq cluster retry {self.cluster.name}`)",
        )
        await self._ended(job_id, f"released: {why}")

    async def _ended(self, job_id: str, why: str) -> None:
        self.started.discard(job_id)
        if why.startswith("released"):
            self.starts.released.add(job_id)
        if job_id in self.ended:
            return
        self.ended.add(job_id)
        if self.starts.failed_start(job_id):
            why = await self._start_failed(job_id)
        self.starts.ended(job_id)
        await self.hooks.pilot_ended(f"{self.cluster.name}/{job_id}", why)

    async def _start_failed(self, job_id: str) -> str:
        """A pilot ended before its runner answered: back off, and after a few in a row
        stop asking, with one alert naming the reason. Returns what its end says."""
        why, stop = await self.starts.failure(job_id, self.login, self._clock())
        log.warning("cluster %s: pilot %s %s", self.cluster.name, job_id, why)
        if stop is not None and self.refused is None:
            self.refused = stop
            await self.hooks.alert(
                self.cluster,
                f"cluster {self.cluster.name}: {stop} (no more requests until the config "
                f"changes or `nvq cluster retry {self.cluster.name}`)",
            )
        return why

    # ---------------------------------------------------------- one pass

    async def step(self) -> ScaleDecision:
        """List the pilots, follow their changes, apply one scaling decision."""
        login = self.login
        assert login is not None
        if self._reinstall:
            self._reinstall = False
            login.runner = await install_pilot_runner(login.conn, self.cluster)
        try:
            listed = await login.pilots()
        except SlurmError as exc:
            log.warning("cluster %s: %s", self.cluster.name, exc)
            return self.last or ScaleDecision(0, [], 0)
        mine = {s.job_id: s for s in listed if s.job_id in self.known}
        for job_id in sorted(self.known - set(mine)):
            await self._ended(job_id, ENDED)
            self.known.discard(job_id)
            self.ended.discard(job_id)
            self.starts.forget(job_id)
        if self.target == 0:
            # Drained: a pilot whose sbatch was in flight when the drain came starts
            # after it. It is given back before it is handed a job.
            late = [
                job_id
                for job_id, status in mine.items()
                if status.phase == "running" and job_id not in self.started
            ]
            if late:
                log.info(
                    "cluster %s: drained: releasing pilots %s that started after the drain",
                    self.cluster.name,
                    ", ".join(late),
                )
                await login.cancel(late)
                for job_id in late:
                    del mine[job_id]
                    await self._ended(job_id, DRAINED)
        for job_id, status in mine.items():
            name = f"{self.cluster.name}/{job_id}"
            home = self.starts.home(job_id, self.cluster)
            if status.phase == "running" and job_id not in self.started:
                self.started.add(job_id)
                # Its time left is known before its node is: placement reads a pilot
                # without one as ending (nvq.daemon.machines.pilots.slot_fields).
                await self.hooks.pilot_status(name, status)
                opener = self.starts.opener(job_id, home, self._login_now)
                await self.hooks.pilot_started(pilot_node(self.cluster, job_id, home), opener)
            elif status.phase == "ending" and job_id in self.started:
                await self._ended(job_id, ENDED)
            await self.hooks.pilot_status(name, status)
        self.statuses = mine

        now = self._clock()
        views = [
            PilotView(
                job_id=s.job_id,
                phase=s.phase,
                starting=s.phase == "running" and self.starts.starting(s.job_id),
                time_left=s.time_left,
                idle_since=self.hooks.idle_since(f"{self.cluster.name}/{s.job_id}")
                if s.phase == "running"
                else None,
            )
            for s in mine.values()
        ]
        self._idle = {v.job_id: v.idle_since for v in views if v.idle_since is not None}
        self.waiting = self.hooks.waiting_jobs(self.cluster)
        decision = decide(
            views,
            self.waiting,
            self.cluster,
            now,
            target=self.target,
            blocked=self.refused is not None or now < self.starts.hold_until,
        )
        self.last = decision
        if decision.release:
            log.info(
                "cluster %s: releasing pilots %s", self.cluster.name, ", ".join(decision.release)
            )
            await login.cancel(decision.release)
            why = released_why(self.target)
            # Gone for the daemon now, before Slurm ends its runner under a live link.
            for job_id in decision.release:
                await self._ended(job_id, why)
        target = self.target
        for _ in range(decision.request):
            # A drain or scale that came while an sbatch was in flight stops the rest.
            if self.target != target or not await self._submit(login):
                break
        return decision

    async def _submit(self, login: SlurmLogin) -> bool:
        cluster = login.cluster  # the script's, whatever a reload does meanwhile
        try:
            job_id = await login.submit()
        except SubmitRefused as exc:
            self.refused = str(exc)
            log.error("cluster %s: sbatch refused: %s", self.cluster.name, exc)
            await self.hooks.alert(
                self.cluster,
                f"cluster {self.cluster.name}: Slurm refused a pilot: {exc} "
                f"(no more requests until the config changes or "
                f"`nvq cluster retry {self.cluster.name}`)",
            )
            return False
        except SlurmError as exc:
            log.warning("cluster %s: %s", self.cluster.name, exc)
            return False
        self.known.add(job_id)
        self.starts.submitted(job_id, cluster)
        await self.hooks.submitted(self.cluster, job_id)
        log.info("cluster %s: requested pilot %s", self.cluster.name, job_id)
        return True

    def _login_now(self) -> SlurmLogin:
        """The connection of the moment: the login node may have been reconnected."""
        if self.login is None:
            raise NodeUnreachable(login_node(self.cluster), self.error or "not connected")
        return self.login
