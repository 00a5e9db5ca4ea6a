"""How a cluster's pilots start, as the site sees it: which pilots' runners have
answered, the attach steps opened to each while it starts, and failed starts.

A pilot that ends before its runner ever answered (and that this queue did not give
back) failed to start. Each failure holds the next request back `start_backoff`
(doubling, capped); `MAX_START_FAILURES` in a row stop requests until a retry, with
one alert naming the reason: the batch script's last output lines, which the waiting
attach step relayed on stderr, else its log or the job's Comment as the login node
sees them, else Slurm's record (`SlurmLogin.end_reason`). An
attach step that ends anyway is opened again after a backoff, never on a fixed short
poll: each is a job step in the site's logs.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
import asyncssh

from nvq.clusters import slurm
from nvq.clusters.config import ClusterConfig
from nvq.clusters.login import SlurmError, SlurmLogin
from nvq.clusters.pilot_hooks import PilotOpener
from nvq.daemon.ssh import NodeUnreachable, RunnerChannel

START_BACKOFF_FIRST = 5.0  # seconds before the request after a pilot failed to start
START_BACKOFF_MAX = 300.0
MAX_START_FAILURES = 3  # failed starts in a row that stop requests until retry
OPEN_BACKOFF_MAX = 30.0  # between attach steps of a pilot whose step keeps ending


def start_backoff(failures: int) -> float:
    """Seconds before the next request after `failures` failed starts in a row."""
    return float(min(START_BACKOFF_MAX, START_BACKOFF_FIRST * 2.0 ** max(0, failures - 1)))


class PilotStarts:
    def __init__(self) -> None:
        self.up: set[str] = set()  # pilots whose runner answered (a Hello) at least once
        self.released: set[str] = set()  # pilots this queue gave back
        self.failures = 0  # pilots in a row that ended before their runner answered
        self.hold_until = 0.0  # no request before this (after a failed start)
        self._opens: dict[str, int] = {}  # attach steps opened since the runner answered
        self._channels: dict[str, RunnerChannel] = {}  # each pilot's last attach step
        self._said: dict[str, str] = {}  # the batch output an earlier attach step relayed
        # Each pilot's own home (`<home>/<job id>`) as it was submitted: a reload that
        # changes `home` does not move pilots already submitted. One of an earlier
        # daemon life gets the config's it is adopted with (queue.db keeps ids only).
        self.homes: dict[str, str] = {}

    def submitted(self, job_id: str, cluster: ClusterConfig) -> None:
        """A pilot was submitted with `cluster`: its home is `cluster`'s for good."""
        self.homes[job_id] = slurm.pilot_home(cluster, job_id)

    def home(self, job_id: str, cluster: ClusterConfig) -> str:
        """The pilot's home: as it was submitted, else as `cluster` says now."""
        return self.homes.setdefault(job_id, slurm.pilot_home(cluster, job_id))

    def answered(self, job_id: str) -> None:
        """The pilot's runner answered: it started, and the run of failures ends."""
        self.up.add(job_id)
        self._opens.pop(job_id, None)
        self.reset()

    def reset(self) -> None:
        self.failures = 0
        self.hold_until = 0.0

    def starting(self, job_id: str) -> bool:
        return job_id not in self.up

    def failed_start(self, job_id: str) -> bool:
        """Did this pilot, now ended, end before its runner answered?"""
        return job_id not in self.up and job_id not in self.released

    async def failure(
        self, job_id: str, login: SlurmLogin | None, now: float
    ) -> tuple[str, str | None]:
        """Count a pilot that ended before its runner answered: what its end says, and
        why requests stop now (None while they only back off)."""
        reason = await self.reason(job_id, login)
        self.failures += 1
        self.hold_until = now + start_backoff(self.failures)
        stop = None
        if self.failures >= MAX_START_FAILURES:
            stop = (
                f"{self.failures} pilots in a row ended before their runner answered; "
                f"the last, {job_id}: {reason}"
            )
        return f"ended before its runner answered: {reason}", stop

    def opener(
        self, job_id: str, home: str, login: Callable[[], SlurmLogin]
    ) -> PilotOpener:
        """Opens the attach step of the pilot whose home is `home` through the login
        connection of the moment.
        The step waits for the runner itself; one that ended anyway (the runner died,
        Slurm refused the step) is opened again only after a backoff."""

        async def open_channel() -> RunnerChannel:
            opened = self._opens.get(job_id, 0)
            if opened:
                await anyio.sleep(min(OPEN_BACKOFF_MAX, 2.0 ** (opened - 1)))
            self._opens[job_id] = opened + 1
            channel = await login().open_pilot(job_id, home)
            self._keep_said(job_id)
            self._channels[job_id] = channel
            return channel

        return open_channel

    def _keep_said(self, job_id: str) -> None:
        """Keep what the pilot's last attach step relayed of its batch output: a step
        opened after the allocation ended says only srun's refusal."""
        channel = self._channels.get(job_id)
        said = slurm.output_tail(channel.stderr_tail) if channel is not None else ""
        if said:
            self._said[job_id] = said

    async def reason(self, job_id: str, login: SlurmLogin | None) -> str:
        """Why a pilot ended before its runner answered: its batch script's last words,
        relayed by its attach step, else read where the login node sees them (its log
        in a shared `home`, the job's Comment), else Slurm's record of the job."""
        self._keep_said(job_id)
        said = self._said.pop(job_id, "")
        if said:
            return said
        if login is not None:
            try:
                recorded = await login.end_reason(job_id, self.homes.get(job_id))
            except (SlurmError, NodeUnreachable, asyncssh.Error, OSError):
                recorded = None
            if recorded:
                return recorded
        return "Slurm keeps no record of why"

    def ended(self, job_id: str) -> None:
        """Its end is handled: no step of it will be opened again."""
        self._channels.pop(job_id, None)
        self._said.pop(job_id, None)
        self._opens.pop(job_id, None)

    def forget(self, job_id: str) -> None:
        """It left squeue: nothing of it is kept."""
        self.ended(job_id)
        self.up.discard(job_id)
        self.released.discard(job_id)
        self.homes.pop(job_id, None)
