"""Group commit: journaled events that arrive together from one node (a burst of
starts and exits in one read of its link) become one transaction instead of one each.

Nothing waits for company: the batch is exactly what one read delivered, so a lone
event commits at once, as before. Only the plain case is batched (a reconciled node,
a job the daemon has in memory, no kill owed for the attempt); at the first event
that needs more (a replay, an unknown job, a reassigned attempt) the batch so far is
committed and that event and the rest go through `RunnerEvents.on_message` one by one.
The rule "commit before acting" holds: acks, kills and artifact work follow the one
commit, and the next placement pass sees every exit of the batch.
"""

from __future__ import annotations

from collections.abc import Sequence

from nvq.daemon.apply import record
from nvq.daemon.nodes import NodeRuntime
from nvq.daemon.reassign import Machines
from nvq.daemon.state import State
from nvq.domain import transitions
from nvq.model import Job, NodeSeq, Tx
from nvq_runner import protocol as p

Plain = p.JobStarted | p.JobExited


def plain_run(msgs: Sequence[p.RunnerMsg], start: int) -> int:
    """How many messages from `start` on are starts and exits (batch candidates)."""
    end = start
    while end < len(msgs) and isinstance(msgs[end], Plain):
        end += 1
    return end - start


async def commit_together(
    state: State, machines: Machines, node: NodeRuntime, evs: Sequence[Plain], replaying: bool
) -> int:
    """Apply the leading plain events of `evs` in one transaction. Returns how many it
    took; the rest are the caller's, one by one. Takes the lock."""
    async with state.lock:
        if replaying or not node.reconciled or node.send is None:
            return 0
        tx = Tx()
        seen: dict[int, Job] = {}  # jobs as earlier events of this batch left them
        ended: list[tuple[Job, p.JobExited]] = []
        taken = 0
        last_seq = node.applied_seq
        for ev in evs:
            if ev.seq <= last_seq:
                taken += 1  # applied before: its ack below covers it
                continue
            job = seen.get(ev.job_id) or state.jobs.get(ev.job_id)
            if (
                job is None
                or ev.attempt != job.attempt
                or (ev.job_id, ev.attempt) in state.reaps
                or job.node != node.name
            ):
                break
            if isinstance(ev, p.JobStarted):
                outcome = transitions.started(job, ev, node.name)
            else:
                outcome = transitions.exited(job, ev, node.name)
                ended.append((outcome.job if outcome.job is not None else job, ev))
            if outcome.job is not None:
                seen[ev.job_id] = outcome.job
            record(tx, outcome)
            last_seq = ev.seq
            taken += 1
        if last_seq > node.applied_seq:
            tx.node_seq = NodeSeq(node.name, node.journal_id, last_seq)
            await state.commit(tx)
            state.post_kills(tx.add_reaps)
            node.applied_seq = last_seq
        if taken:
            node.post(p.Ack(max(last_seq, node.applied_seq)))
        for job, exited in ended:
            # Its last artifacts are fetched before the job may run again.
            machines.attempt_ended(node, job, exited.attempt, kept=exited.artifacts)
        return taken
