"""After a runner (re)connects and replays its journal: make it and the database agree.
Attempts the database thinks run there but the runner does not know are started again
or given up; attempts the runner runs that the database moved on from are killed."""

from __future__ import annotations

import logging
import time

from nvq.daemon.core.apply import record
from nvq.daemon.core.effects import Effects
from nvq.daemon.core.held import Held
from nvq.daemon.core.nodes import NodeRuntime
from nvq.daemon.core.recovery import Recovery
from nvq.domain import fencing, transitions
from nvq.model import JobState, Outcome, Reap, Tx

log = logging.getLogger("nvq.daemon")


async def reconcile(held: Held, recovery: Recovery, node: NodeRuntime) -> None:
    """The node counts as reconciled once this commits: its kills
    go out first (an old attempt still running there, its job reassigned while the
    node was away, ends before anything new happens on it), then the starts."""
    assert node.hello is not None
    state = held.state
    now = time.time()
    active = {(a.job_id, a.attempt) for a in node.hello.active}
    tx = Tx()
    fx = Effects(reconciled=[node], kick=True)  # its cards may take work again
    for job in list(state.jobs.values()):
        if job.state is not JobState.RUNNING or job.node != node.name:
            continue
        if (job.id, job.attempt) in active:
            continue
        if job.started_at is None:
            # The start is unresolved (daemon died or link dropped around it):
            # Start is idempotent per attempt, so asking again is safe.
            fx.starts.append(job)
        else:
            record(tx, transitions.runner_forgot(job, node.name, now))
    for job_id, attempt in active:
        live = state.jobs.get(job_id)
        if (
            live is not None
            and live.attempt == attempt
            and live.node == node.name
            and live.state is JobState.RUNNING
        ):
            continue
        reap = state.reaps.get((job_id, attempt))
        lost = state.reaping.get((job_id, attempt))
        found = fencing.resumed(lost, attempt, node.name, reap) if lost else Outcome()
        if live is None and recovery.waits_for(node.name, job_id):
            continue  # queue.db forgot it; the node's record is on its way
        if found.job is not None:
            # --no-reassign ran on through the partition: it is running.
            record(tx, found)
            tx.drop_reaps.append((job_id, attempt))
            log.warning("node %s: job %s (--no-reassign) ran on while the node "
                        "was away; it is running again", node.name, job_id)
            continue
        if reap is None:
            # Recorded, so placement on this node waits for its exit.
            reap = Reap(job_id, attempt, node.name, "orphan")
            tx.add_reaps.append(reap)
        else:
            # A kill owed since the node went away, carried out now: said.
            tx.events.append(fencing.owed_kill_event(reap))
            log.warning("node %s: job %s attempt %s is still running there; "
                        "killing it now (owed: %s)", node.name, job_id, attempt,
                        reap.reason)
        fx.kills_now.append((node, reap))
    # Reaps for attempts the runner no longer runs are settled already.
    for key, reap in list(state.reaps.items()):
        if reap.node == node.name and key not in active:
            tx.drop_reaps.append(key)
    await held.commit(tx, fx)
