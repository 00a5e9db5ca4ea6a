"""When to ask Slurm for pilots and when to give them back, and which jobs a pilot
may take given the time its allocation has left. Pure: no clock, no I/O.

`decide` sees the cluster's pilots, the jobs that wait because no existing node can
take them, and the config, and answers how many pilots to request and which idle
ones to cancel:

* a job counts towards a new pilot once it would fit one (GPUs, memory, walltime)
  and has waited `scale_after`;
* pilots still pending in Slurm, running ones whose runner has not answered yet
  (`starting`: capacity from the moment Slurm grants the allocation, not from the
  runner's hello), and running ones that sit idle with room for a job (one that
  started this moment and has not been given its job yet), absorb that demand before
  new ones are requested, and pending ones beyond it are cancelled (their jobs found
  room elsewhere);
* the total stays within `max_pilots`, and `min_pilots` are kept and requested;
* a running pilot idle for `idle_release` is released, oldest idle first, while
  more than `min_pilots` remain;
* a manual target (`nvq cluster scale`, `drain` = 0) replaces the automatic count:
  pilots are requested up to it, and pending then idle ones above it are released
  at once (busy pilots finish their jobs first);
* after Slurm refused a submission nothing more is requested until the block is
  lifted (config change or `nvq cluster retry`).
"""

from __future__ import annotations

import msgspec

from nvq.clusters.config import ClusterConfig

CPU_JOBS_PER_PILOT = 4  # CPU-only jobs one pilot is counted to take (the runner's default)


class PilotView(msgspec.Struct, frozen=True, kw_only=True):
    job_id: str
    phase: str  # "requested" | "running" | "ending" (PilotStatus.phase)
    starting: bool = False  # running, its runner not connected yet: all its cards free
    time_left: float | None = None  # seconds; None when unlimited or unknown
    idle_since: float | None = None  # when it last became idle; None while it runs jobs


class WaitingJob(msgspec.Struct, frozen=True, kw_only=True):
    """A job no existing node can take now."""

    id: int
    gpus: int = 0
    memory_mb: int | None = None
    timeout: float | None = None  # --timeout / --max-runtime in seconds; None: untimed
    waiting_since: float


class ScaleDecision(msgspec.Struct, frozen=True):
    request: int  # new pilots to submit
    release: list[str]  # job ids of pilots to scancel
    demand: int  # pilots the waiting jobs would fill, for `nvq cluster status`


def fits_walltime(timeout: float | None, time_left: float | None, cluster: ClusterConfig) -> bool:
    """May a job with `timeout` start on a pilot with `time_left`? Its time limit plus
    `vacate_before` (time to sync its artifacts) must fit. Untimed jobs only go to
    pilots when `allow_untimed` is set, and not to one they would have to leave at once."""
    if time_left is None:
        return timeout is not None or cluster.allow_untimed
    if timeout is None:
        return cluster.allow_untimed and not vacate_due(time_left, cluster)
    return timeout + cluster.vacate_before <= time_left


def vacate_due(time_left: float | None, cluster: ClusterConfig) -> bool:
    """Must untimed jobs leave this pilot now, before Slurm ends the allocation?"""
    return time_left is not None and time_left <= cluster.vacate_before


def fits_shape(job: WaitingJob, cluster: ClusterConfig) -> bool:
    """Could a fresh pilot of this cluster ever run the job?"""
    if job.gpus > cluster.gpus_per_pilot:
        return False
    if (
        job.memory_mb is not None
        and cluster.memory_mb is not None
        and (job.memory_mb > cluster.memory_mb)
    ):
        return False
    return fits_walltime(job.timeout, cluster.time, cluster)


def pilots_needed(
    jobs: list[WaitingJob], cluster: ClusterConfig, cpu_jobs_per_pilot: int = CPU_JOBS_PER_PILOT
) -> int:
    """How many fresh pilots the jobs fill: GPU jobs packed first-fit by cards, CPU-only
    jobs by count (they share a pilot's CPUs, and ride along with GPU jobs)."""
    free: list[int] = []  # free cards per pilot being filled
    for job in sorted((j for j in jobs if j.gpus > 0), key=lambda j: -j.gpus):
        for i, cards in enumerate(free):
            if cards >= job.gpus:
                free[i] -= job.gpus
                break
        else:
            free.append(cluster.gpus_per_pilot - job.gpus)
    cpu_jobs = sum(1 for j in jobs if j.gpus == 0)
    per_pilot = max(1, cpu_jobs_per_pilot)
    for_cpu = -(-cpu_jobs // per_pilot)
    return max(len(free), for_cpu)


def absorb(
    jobs: list[WaitingJob], running: list[PilotView], cluster: ClusterConfig
) -> tuple[list[WaitingJob], set[str]]:
    """Pack jobs onto the idle running pilots they fit (cards and walltime), largest
    first; answer the jobs left over and the pilots that take some."""
    free = {
        p.job_id: cluster.gpus_per_pilot
        for p in running
        if p.idle_since is not None or p.starting
    }
    left = {p.job_id: p.time_left for p in running}
    unplaced: list[WaitingJob] = []
    taking: set[str] = set()
    for job in sorted(jobs, key=lambda j: -j.gpus):
        home = next(
            (
                pilot
                for pilot, cards in free.items()
                if cards >= job.gpus and fits_walltime(job.timeout, left[pilot], cluster)
            ),
            None,
        )
        if home is None:
            unplaced.append(job)
        else:
            free[home] -= job.gpus
            taking.add(home)
    return unplaced, taking


def decide(
    pilots: list[PilotView],
    waiting: list[WaitingJob],
    cluster: ClusterConfig,
    now: float,
    *,
    target: int | None = None,
    blocked: bool = False,
    cpu_jobs_per_pilot: int = CPU_JOBS_PER_PILOT,
) -> ScaleDecision:
    alive = [p for p in pilots if p.phase != "ending"]
    pending = sum(1 for p in alive if p.phase == "requested")
    ripe = [
        j
        for j in waiting
        if fits_shape(j, cluster) and now - j.waiting_since >= cluster.scale_after
    ]
    # Jobs an idle running pilot can take are about to be placed there (the pass that
    # sees a pilot start still sees its job waiting): they ask for no new pilot.
    unplaced, taking = absorb(ripe, [p for p in alive if p.phase == "running"], cluster)
    demand = pilots_needed(unplaced, cluster, cpu_jobs_per_pilot)

    if target is not None:
        wanted = target
        keep = target
        idle_for = 0.0
    else:
        wanted = max(cluster.min_pilots, len(alive) - pending + demand)
        keep = cluster.min_pilots
        idle_for = cluster.idle_release
    wanted = min(wanted, cluster.max_pilots)
    request = 0 if blocked else max(0, wanted - len(alive))

    # Pending pilots nobody needs any more (their jobs went elsewhere) go first,
    # newest first: they would only start to sit idle.
    surplus = max(0, pending - demand) if target is None else pending
    spare = sorted(
        (p for p in alive if p.phase == "requested"), key=lambda p: _newest_first(p.job_id)
    )[:surplus]
    idle = sorted(
        (
            p
            for p in alive
            if p.phase == "running"
            and not p.starting
            and p.idle_since is not None
            and now - p.idle_since >= idle_for
            and (target is not None or p.job_id not in taking)
        ),
        key=lambda p: (p.idle_since, p.job_id),
    )
    release = [p.job_id for p in [*spare, *idle]][: max(0, len(alive) - keep)]
    return ScaleDecision(request=request, release=release, demand=demand)


def _newest_first(job_id: str) -> tuple[int, str]:
    return (-int(job_id) if job_id.isdigit() else 0, job_id)


def request_in(waiting: list[WaitingJob], cluster: ClusterConfig, now: float) -> float | None:
    """Seconds until the first waiting job that fits a pilot has waited `scale_after`;
    None when none is still within it."""
    due = [
        left
        for j in waiting
        if fits_shape(j, cluster) and (left := j.waiting_since + cluster.scale_after - now) > 0
    ]
    return min(due, default=None)


def next_pass_in(
    cluster: ClusterConfig,
    now: float,
    waiting: list[WaitingJob],
    idle_since: list[float],
    hold_until: float,
    poll: float,
    soonest: float,
) -> float:
    """Seconds to a manager's next pass: `poll` at most, and no later than the moment a
    waiting job has waited `scale_after`, an idle pilot is due for release, or a hold
    after a failed start ends (never sooner than `soonest`, but for the hold)."""
    wait = poll
    for job in waiting:
        due = job.waiting_since + cluster.scale_after - now
        if due > 0:
            wait = min(wait, max(soonest, due))
    for since in idle_since:
        wait = min(wait, max(soonest, since + cluster.idle_release - now))
    if hold_until > now:
        wait = min(wait, hold_until - now)
    return wait
