"""How many allocations the pilot rule asks Slurm for, with the daemon's clock and
ranks, simulated second by second over `nvq.clusters.scaling.decide` (the rule the
daemon runs) beside the rule of the previous round (`waiting_since` taken from the
dispatch rank, and no pilot absorbing the job it was started for).

* `local_within_scale_after`: 100 jobs, one every 10 s, each finding a local card
  1–4.5 s after it started waiting (`scale_after = 5s`); the manager passes when a job
  starts waiting and every 10 s. Goal: 0 sbatch calls.
* `bursty`: one hour of bursts (4 one-card jobs every 15 min, 3 min each), no local
  card, pilots of one card that start 20 s after sbatch, `idle_release = 10m`,
  `scale_after = 5s`: sbatch calls and idle pilot-minutes.

Prints one JSON line.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

from nvq.clusters.config import ClusterConfig
from nvq.clusters.scaling import PilotView, ScaleDecision, WaitingJob, decide, pilots_needed

CLUSTER = ClusterConfig(
    name="hpc",
    host="login",
    gpus_per_pilot=1,
    max_pilots=8,
    scale_after=5.0,
    idle_release=600.0,
    time=8 * 3600.0,
    vacate_before=60.0,
)


def previous_decide(
    pilots: list[PilotView], waiting: list[WaitingJob], cluster: ClusterConfig, now: float
) -> ScaleDecision:
    """The rule before this round: running pilots never absorb waiting jobs."""
    alive = [p for p in pilots if p.phase != "ending"]
    pending = sum(1 for p in alive if p.phase == "requested")
    ripe = [j for j in waiting if now - j.waiting_since >= cluster.scale_after]
    demand = pilots_needed(ripe, cluster)
    wanted = min(max(cluster.min_pilots, len(alive) - pending + demand), cluster.max_pilots)
    request = max(0, wanted - len(alive))
    idle = [
        p.job_id
        for p in alive
        if p.phase == "running"
        and p.idle_since is not None
        and now - p.idle_since >= cluster.idle_release
    ]
    return ScaleDecision(request, idle, demand)


@dataclass
class Pilot:
    id: str
    requested_at: float
    started_at: float | None = None
    job: int | None = None
    idle_since: float | None = None


@dataclass
class Sim:
    previous: bool
    start_delay: float = 20.0
    pilots: dict[str, Pilot] = field(default_factory=dict)
    sbatch: int = 0
    idle_seconds: float = 0.0
    next_id: int = 1

    def views(self, now: float) -> list[PilotView]:
        return [
            PilotView(
                job_id=p.id,
                phase="running" if p.started_at is not None else "requested",
                time_left=CLUSTER.time,
                idle_since=p.idle_since if p.started_at is not None and p.job is None else None,
            )
            for p in self.pilots.values()
        ]

    def decide(self, waiting: list[WaitingJob], now: float) -> None:
        rule = previous_decide if self.previous else decide
        d = rule(self.views(now), waiting, CLUSTER, now)
        for job_id in d.release:
            self.pilots.pop(job_id, None)
        for _ in range(d.request):
            pid = str(self.next_id)
            self.next_id += 1
            self.pilots[pid] = Pilot(pid, now)
            self.sbatch += 1

    def start_due(self, now: float) -> None:
        for p in self.pilots.values():
            if p.started_at is None and now - p.requested_at >= self.start_delay:
                p.started_at = now
                p.idle_since = now


def local_within_scale_after(previous: bool, seed: int = 1) -> int:
    rng = random.Random(seed)
    sim = Sim(previous)
    jobs = [(i * 10.0, i * 10.0 + rng.uniform(1.0, 4.5)) for i in range(1, 101)]
    arrivals = {arrive for arrive, _ in jobs}
    for t in range(0, 1020):
        now = float(t)
        if now not in arrivals and t % 10:
            continue  # the manager passes when a job starts waiting, and every 10 s
        waiting = [
            WaitingJob(id=i, gpus=1, timeout=600.0, waiting_since=float(i) if previous else arrive)
            for i, (arrive, placed) in enumerate(jobs, 1)
            if arrive <= now < placed
        ]
        sim.decide(waiting, now)
        sim.pilots.clear()  # whatever was asked for is not needed: count only the asks
    return sim.sbatch


def bursty(previous: bool) -> tuple[int, float]:
    sim = Sim(previous)
    jobs = {
        b * 4 + k + 1: (b * 900.0, 180.0) for b in range(4) for k in range(4)
    }  # id → (arrival, duration)
    started: dict[int, float] = {}
    for t in range(0, 3600):
        now = float(t)
        for p in sim.pilots.values():  # jobs end
            if p.job is not None and now - started[p.job] >= jobs[p.job][1]:
                p.job, p.idle_since = None, now
        sim.start_due(now)
        waiting = [
            WaitingJob(id=i, gpus=1, timeout=600.0, waiting_since=float(i) if previous else a)
            for i, (a, _) in jobs.items()
            if a <= now and i not in started
        ]
        sim.decide(waiting, now)  # the pass that sees pilots start, before placement
        for p in sim.pilots.values():  # placement
            if p.started_at is not None and p.job is None:
                job = next((j.id for j in waiting if j.id not in started), None)
                if job is not None:
                    p.job, p.idle_since = job, None
                    started[job] = now
        sim.idle_seconds += sum(
            1 for p in sim.pilots.values() if p.started_at is not None and p.job is None
        )
    return sim.sbatch, sim.idle_seconds / 60


def main() -> None:
    before, now = bursty(True), bursty(False)
    print(
        json.dumps(
            {
                "bench": "pilot_scaling",
                "local_within_scale_after_sbatch_per_100": {
                    "now": local_within_scale_after(False),
                    "previous": local_within_scale_after(True),
                },
                "bursty_hour_sbatch": {"now": now[0], "previous": before[0]},
                "bursty_hour_idle_pilot_minutes": {
                    "now": round(now[1], 1),
                    "previous": round(before[1], 1),
                },
            }
        )
    )


if __name__ == "__main__":
    main()
