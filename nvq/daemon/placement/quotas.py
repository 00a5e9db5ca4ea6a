"""Limits per account in the placement pass and at submit: each waiting user against
their `[limits]` / `[users.NAME]` limits (`nvq.domain.quotas`), from the running jobs
and the usage book's last day, and the submit refused over `max_queued_jobs`.

Limits count per OS user. The queue's admins are bound too, unless `[limits]
exempt_admins = true`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from nvq.config import Config
from nvq.config.types import Limits
from nvq.daemon.core.apply import queue_admins
from nvq.daemon.core.errors import RequestError
from nvq.daemon.core.state import State
from nvq.domain import quotas
from nvq.domain.placement import PendingJob
from nvq.model import JobRecord


def limits_of(config: Config, user: str) -> Limits:
    own = config.users.get(user)
    return own.limits if own is not None else config.limits.defaults


def any_limits(config: Config) -> bool:
    def some(limits: Limits) -> bool:
        return any(
            v is not None
            for v in (
                limits.max_running_gpus,
                limits.max_running_jobs,
                limits.max_queued_jobs,
                limits.max_gpu_hours,
            )
        )

    return some(config.limits.defaults) or any(some(u.limits) for u in config.users.values())


def bound_users(state: State, users: Iterable[str]) -> dict[str, Limits]:
    """The users among `users` that some running or hourly limit binds."""
    config = state.config
    exempt = queue_admins(state) if config.limits.exempt_admins else frozenset()
    out: dict[str, Limits] = {}
    for user in users:
        if user in exempt:
            continue
        limits = limits_of(config, user)
        if (
            limits.max_running_gpus is not None
            or limits.max_running_jobs is not None
            or limits.max_gpu_hours is not None
        ):
            out[user] = limits
    return out


def standings(
    state: State, pending: Sequence[PendingJob], now: float
) -> dict[str, quotas.Standing]:
    """Each limited user with jobs in `pending`, against their limits now."""
    if not any_limits(state.config):
        return {}
    bound = bound_users(state, {p.user for p in pending})
    if not bound:
        return {}
    gpus = dict.fromkeys(bound, 0)
    jobs = dict.fromkeys(bound, 0)
    running: dict[str, list[JobRecord]] = {}
    for job in state.index.running.values():
        if job.user in bound:
            gpus[job.user] += len(job.gpus)
            jobs[job.user] += 1
            running.setdefault(job.user, []).append(job)
    out: dict[str, quotas.Standing] = {}
    for user, limits in bound.items():
        standing = quotas.Standing(
            user=user,
            running_gpus=gpus[user],
            running_jobs=jobs[user],
            max_gpus=limits.max_running_gpus,
            max_jobs=limits.max_running_jobs,
            max_gpu_hours=limits.max_gpu_hours,
        )
        if limits.max_gpu_hours is not None:
            spans = list(state.usage.day_spans(user, now))
            for job in running.get(user, ()):
                since = job.started_at or job.dispatched_at
                if since is not None:
                    weight = state.usage.weight(job, state.card_sizes)
                    spans.append(quotas.Span(since, now, weight))
            standing.day_gpu_seconds = quotas.day_use(spans, now)
            if standing.hours_over:
                standing.hours_free_at = quotas.free_at(spans, limits.max_gpu_hours * 3600, now)
        out[user] = standing
    return out


def admitted(
    pending: Sequence[PendingJob], standing: dict[str, quotas.Standing]
) -> list[PendingJob]:
    """`pending` less the jobs their user's limits hold back before the pass starts."""
    if not standing:
        return list(pending)
    out = []
    for p in pending:
        s = standing.get(p.user)
        if s is None or s.blocks(1 if p.gpu is not None else p.gpus) is None:
            out.append(p)
    return out


def check_queued(state: State, user: str, adding: int) -> None:
    """Refuse a submit that would take `user` over `max_queued_jobs`."""
    config = state.config
    if not any_limits(config):
        return
    if config.limits.exempt_admins and user in queue_admins(state):
        return
    most = limits_of(config, user).max_queued_jobs
    if most is None:
        return
    queued = state.index.queued_by_user.get(user, 0)
    if queued + adding > most:
        what = f"{adding} more" if adding > 1 else "another"
        raise RequestError(
            f"{user} has {queued} jobs queued, at most {most} (max_queued_jobs): "
            f"{what} would be over; wait for some to start, or cancel some"
        )
