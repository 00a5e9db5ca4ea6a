"""Jobs a node knows that queue.db has forgotten (a damaged WAL, an older backup
restored) are made again from the node's start records instead of being killed as
orphans: at hello the daemon asks the runner what it kept of them (`RecoverQuery`),
and until the answer comes the reconciliation leaves them running. Each one the node
kept is re-created (`nvq.domain.recovery`), tagged `recovered`, with one alert; one
it did not keep and still runs is an orphan, killed as before."""

from __future__ import annotations

import logging
from functools import partial

from nvq.daemon.core.awaited import Awaited
from nvq.daemon.core.effects import Effects
from nvq.daemon.core.held import Held, locked
from nvq.daemon.core.nodes import NodeRuntime
from nvq.daemon.core.state import State
from nvq.domain import recovery
from nvq.home import queue_owner
from nvq.model import NewAlert, Reap, Tx
from nvq_runner import protocol as p

log = logging.getLogger("nvq.daemon")

FEATURE = "recover"
QUERY_TIMEOUT = 30.0
MOST_IDS = 100_000  # the ids one question names (a far older backup: the newest)


class Recovery:
    def __init__(self, state: State) -> None:
        self.state = state
        self._answers = Awaited[p.Recovered](QUERY_TIMEOUT)
        # node → job ids asked about, not yet answered: not orphans until then
        self.pending: dict[str, set[int]] = {}

    def answer(self, msg: p.Recovered) -> None:
        self._answers.answer(msg.req, msg)

    def waits_for(self, node: str, job_id: int) -> bool:
        return job_id in self.pending.get(node, ())

    async def forgotten(self, held: Held, hello: p.Hello) -> set[int]:
        """The job ids `hello` shows the node knows and queue.db does not: past the
        last id it assigned, and running ones it has no record of. Call before the
        ids are raised past the node's (`_ids_seen`)."""
        store = self.state.store
        known = await store.last_job_id()
        ids = set(range(max(known + 1, hello.max_job_id - MOST_IDS + 1), hello.max_job_id + 1))
        for active in hello.active:
            job_id = active.job_id
            unknown = job_id not in ids and job_id not in self.state.jobs
            if unknown and await store.job(job_id) is None:
                ids.add(job_id)
        return ids

    def begin(
        self, held: Held, node: NodeRuntime, ids: set[int], unknown_ids: NewAlert | None
    ) -> bool:
        """Ask the node about `ids` (answered in a task of its own: the answer comes
        on the link this hello came on); `unknown_ids` is raised then if ids stay
        unknown. False when this runner cannot be asked."""
        hello = node.hello
        if not ids or hello is None or FEATURE not in hello.features:
            return False
        self.pending[node.name] = set(ids)
        self.state.later.start(partial(self._recover, node, frozenset(ids), unknown_ids))
        return True

    async def _recover(
        self, node: NodeRuntime, ids: frozenset[int], unknown_ids: NewAlert | None
    ) -> None:
        state = self.state
        question = partial(
            lambda req, q: p.RecoverQuery(req=req, job_ids=sorted(ids), queue_id=q),
            q=state.store.queue_id,
        )
        reply = await self._answers.ask(node, question)
        async with locked(state) as held:
            self.pending.pop(node.name, None)
            jobs = []
            for rec in reply.records if reply is not None else []:
                job_id = rec.start.job_id
                unknown = job_id in ids and job_id not in state.jobs
                if unknown and await state.store.job(job_id) is None:
                    jobs.append(recovery.recovered_job(rec, node.name, queue_owner()))
            tx = Tx()
            if jobs:
                tx.new_jobs = jobs
                tx.events = [recovery.event(j) for j in jobs]
                tx.alerts = [recovery.alert(node.name, jobs)]
            back = {j.id for j in jobs}
            # What still runs there and was not kept: an orphan, killed as before.
            active = node.hello.active if node.hello is not None else []
            orphans = [
                Reap(a.job_id, a.attempt, node.name, "orphan")
                for a in active
                if a.job_id in ids and a.job_id not in back and a.job_id not in state.jobs
                and (a.job_id, a.attempt) not in state.reaps
            ]
            tx.add_reaps = orphans
            if back:
                state.store_behind.missing.get(node.name, set()).difference_update(back)
            if unknown_ids is not None and state.store_behind.missing.get(node.name):
                tx.alerts = [*tx.alerts, unknown_ids]  # some stay unknown
            kills = [(node, reap) for reap in orphans]
            await held.commit(tx, Effects(kills_now=kills, kick=True))
            if back:
                state.store_behind.recovered.setdefault(node.name, set()).update(back)
                log.warning("node %s: recovered jobs %s that queue.db had forgotten, from "
                            "the node's start records", node.name, sorted(back))
