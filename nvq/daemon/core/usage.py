"""Who used the cards: fair share's ledger, kept incrementally.

Every commit in which a running attempt ends (it exited, was lost, moved, preempted,
cancelled, paused) adds that attempt to the ledger in the same transaction: a
`charges` row, and its account's new decayed total (`nvq.domain.fair_share`), under
both ways of counting (OS user and submitter label). A placement pass then needs only
the ledger's entries for the accounts it orders, plus what the attempts running now
have used so far — never a sweep over past attempts. The ledger is read back from
`queue.db` when the daemon starts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence

from nvq.config import Config
from nvq.domain import fair_share as fs
from nvq.domain import quotas
from nvq.domain.attempts import ending_of
from nvq.model import Charge, JobRecord, JobState, Tx
from nvq.store import Store

CardSizes = Callable[[str | None, Sequence[int]], list[int | None]]


class UsageBook:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.ledger: dict[str, fs.Usage] = {}
        # OS user → their attempts that ended within the last day (`max_gpu_hours`).
        self.recent: dict[str, list[quotas.Span]] = {}
        # (job id, attempt) → cards' worth it holds: asked once per running attempt.
        self._weights: dict[tuple[int, int], float] = {}

    async def load(self, store: Store) -> None:
        self.ledger = await store.usage()
        for c in await store.charges_since(time.time() - quotas.DAY):
            self._remember(c)

    def _remember(self, c: Charge) -> None:
        span = quotas.Span(c.started_at, c.ended_at, c.weight)
        self.recent.setdefault(c.user, []).append(span)

    def day_spans(self, user: str, now: float) -> list[quotas.Span]:
        """The user's attempts that ended within the last day (older ones dropped)."""
        spans = self.recent.get(user)
        if not spans:
            return []
        since = now - quotas.DAY
        if spans[0].end < since:
            spans[:] = [s for s in spans if s.end >= since]
        return spans

    @property
    def halflife(self) -> float:
        return self.config.queue.fair_share_halflife

    def account(self, job: JobRecord) -> str:
        return fs.account_of(job.user, job.spec.submitter, self.config.queue.fair_share_by)

    def weight(self, job: JobRecord, sizes: CardSizes) -> float:
        key = (job.id, job.attempt)
        found = self._weights.get(key)
        if found is None:
            found = fs.card_weight(len(job.gpus), job.spec.vram_mb, sizes(job.node, job.gpus))
            self._weights[key] = found
        return found

    # ------------------------------------------------------------ charging

    def charge(self, tx: Tx, before: Mapping[int, JobRecord], sizes: CardSizes) -> None:
        """Add to `tx` the attempts it ends: a job that ran (in `before`) and in `tx`
        no longer runs, or runs a later attempt."""
        latest = {job.id: job for job in tx.jobs}
        endings = {
            ev.job_id: word
            for ev in tx.events
            if ev.job_id is not None and (word := ending_of(ev.kind)) is not None
        }
        now = time.time()
        charges: list[Charge] = []
        for job_id, new in latest.items():
            old = before.get(job_id)
            if old is None or old.state is not JobState.RUNNING:
                continue
            if new.state is JobState.RUNNING and new.attempt == old.attempt:
                continue
            same = new.attempt == old.attempt
            start = (new.started_at if same else None) or old.started_at or old.dispatched_at
            if start is None:
                continue
            end = new.ended_at if same and new.ended_at and new.ended_at >= start else now
            weight = self.weight(old, sizes)
            self._weights.pop((old.id, old.attempt), None)
            charges.append(
                Charge(
                    job_id=old.id,
                    attempt=old.attempt,
                    user=old.user,
                    submitter=old.spec.submitter or old.user,
                    node=old.node,
                    started_at=start,
                    ended_at=max(start, min(end, now)),
                    weight=weight,
                    cards=len(old.gpus),
                    dispatched_at=old.dispatched_at,
                    outcome=endings.get(old.id, str(new.state)),
                )
            )
        if not charges:
            return
        tx.charges = [*tx.charges, *charges]
        entries: dict[str, fs.Usage] = {}
        for c in charges:
            amount = fs.run_charge(c.weight, c.started_at, c.ended_at, now, self.halflife)
            for by in ("user", "submitter"):
                key = fs.ledger_key(by, fs.account_of(c.user, c.submitter, by))
                old_entry = entries.get(key, self.ledger.get(key))
                entries[key] = fs.charged(old_entry, amount, now, self.halflife)
        tx.usage = [*tx.usage, *((k, u.gpu_seconds, u.at) for k, u in entries.items())]

    def committed(self, tx: Tx) -> None:
        for key, value, at in tx.usage:
            self.ledger[key] = fs.Usage(value, at)
        for c in tx.charges:
            self._remember(c)

    # ------------------------------------------------------------ reading

    def standings(
        self, accounts: Iterable[str], running: Iterable[JobRecord], sizes: CardSizes, now: float
    ) -> dict[str, float]:
        """Each of `accounts`' usage over its share, as placement orders by."""
        queue = self.config.queue
        wanted = set(accounts)
        runs: list[fs.Running] = []
        for j in running:
            since = j.started_at or j.dispatched_at
            account = self.account(j)
            if since is not None and account in wanted:
                runs.append(fs.Running(account, self.weight(j, sizes), since))
        return fs.standings(
            wanted,
            self.ledger,
            runs,
            by=queue.fair_share_by,
            shares={a: self.share(a) for a in wanted},
            now=now,
            halflife=self.halflife,
        )

    def share(self, account: str) -> float:
        user = self.config.users.get(account)
        return user.share if user is not None else 1.0
