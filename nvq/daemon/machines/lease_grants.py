"""The leases the daemon has granted, kept in queue.db (the `meta` table, one JSON
document), so that a daemon that starts again honours what the previous one
promised: nothing of a node it cannot reach runs elsewhere before that node's lease
has run out (nvq.config.lease). That holds for a Slurm pilot too, which the daemon
adopts only after start: its saved grant outlives saves made meanwhile (`merged`)
and is claimed when the pilot is added (`claim`). And the grant of a planned stop: before it goes,
the daemon gives every runner it reaches `[queue] max_downtime`, so an upgrade or
the queue host's reboot stops no job.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Collection

import anyio

from nvq.daemon.core.nodes import NodeRuntime
from nvq.daemon.core.state import State
from nvq.store.meta import get_meta, set_meta

log = logging.getLogger("nvq.daemon")

KEY = "lease_grants"
AHEAD = 10.0  # seconds written ahead of the book, so a write every few seconds is enough
FLUSH_WAIT = 5.0  # how long a stop waits for its grants to reach the wire
SAVE_WAIT = 10.0  # how long it tries to record them first


async def load(state: State) -> None:
    for node in state.nodes.values():
        await claim(state, node)


async def claim(state: State, node: NodeRuntime) -> None:
    """The grant an earlier daemon saved for this node, into its book: at start, and
    for a node added later (a Slurm pilot is adopted once its allocation is seen)."""
    raw = await state.store.meta(KEY)
    entry = json.loads(raw).get(node.name) if raw else None
    if entry is not None:
        until, lease = entry
        node.lease_book.grant(until, lease)


def merged(
    stored: str | None, doc: dict[str, tuple[float, float]], present: Collection[str], now: float
) -> dict[str, tuple[float, float]]:
    """`doc`, plus the saved grants of nodes the daemon does not hold (yet) while they
    last: a pilot adopted after a save must still find its grant."""
    out: dict[str, tuple[float, float]] = {}
    for name, (until, lease) in (json.loads(stored) if stored else {}).items():
        if name not in present and until > now:
            out[name] = (until, lease)
    out.update(doc)
    return out


def _document(state: State, ahead: float) -> dict[str, tuple[float, float]]:
    return {
        name: (node.lease_book.until + ahead, node.lease_book.lease)
        for name, node in state.nodes.items()
        if node.lease_book.until > 0
    }


async def _save(state: State, doc: dict[str, tuple[float, float]]) -> None:
    present, now = set(state.nodes), time.time()

    def write(conn: sqlite3.Connection) -> None:
        text = json.dumps(merged(get_meta(conn, KEY), doc, present, now), sort_keys=True)
        set_meta(conn, KEY, text)

    await state.store.write(write)


def _stale(saved: dict[str, tuple[float, float]], state: State) -> bool:
    """The saved grants no longer bound the books: one ran past (or a lease grew),
    or one was superseded and the saved one would hold a node back for nothing."""
    for name, node in state.nodes.items():
        book = node.lease_book
        if book.until <= 0:
            continue
        until, lease = saved.get(name, (0.0, 0.0))
        if book.until > until or book.lease > lease or until > book.until + 2 * AHEAD:
            return True
    return False


async def keep(state: State) -> None:
    """Write the books down whenever they outgrow what queue.db holds."""
    saved: dict[str, tuple[float, float]] = {}
    while True:
        if _stale(saved, state):
            doc = _document(state, AHEAD)
            try:
                await _save(state, doc)
                saved = doc
            except Exception:
                log.exception("saving lease grants failed")
        await anyio.sleep(1.0)


async def grant_downtime(state: State) -> int:
    """Before a planned stop: every connected runner that keeps a lease gets one of
    `max_downtime` (recorded first, so a stop cut short still honours it). Returns how
    many got it."""
    from nvq.config.lease import effective_lease
    from nvq_runner.protocol import Heartbeat

    queue = state.config.queue
    if effective_lease(queue.lease, queue.node_grace, queue.kill_grace) is None:
        return 0  # lease = "off": runners never stop jobs on their own, nor get one
    downtime = queue.max_downtime
    reached = [n for n in state.nodes.values()
               if n.send is not None and n.hello is not None and "lease" in n.hello.features]
    now = time.time()
    for node in reached:
        node.lease_book.grant(now + downtime, downtime)
    saved = False
    with anyio.move_on_after(SAVE_WAIT):  # a full disk must not hold the stop up
        await _save(state, _document(state, AHEAD))
        saved = True
    if not saved:
        # Unrecorded, a grant could let the next daemon run a job twice: the jobs
        # keep only their usual lease.
        log.error("could not record the downtime lease in queue.db: none granted")
        return 0
    sent: dict[str, int] = {}
    for node in reached:
        sent[node.name] = node.lease_book.heartbeat(downtime)
        node.post(Heartbeat(downtime, seq=sent[node.name]))
    # Written is not enough: the daemon exits next and closes its connections, and a
    # frame still in flight is lost with them, leaving the runner on its short lease
    # (the soak saw a job fenced 2 s after a stop). Wait for each runner's echo that it
    # holds the grant (`LeaseHeld`), but never hold a stop up for long.
    def held(node: NodeRuntime) -> bool:
        return node.send is None or node.lease_book.echoed >= sent[node.name]

    for _ in range(int(FLUSH_WAIT / 0.02)):
        if all(held(n) for n in reached):
            break
        await anyio.sleep(0.02)
    confirmed = sum(1 for n in reached if n.lease_book.echoed >= sent[n.name])
    log.info("granted %d runner(s) a lease of %gs for the downtime (%d confirmed it)",
             len(reached), downtime, confirmed)
    if confirmed < len(reached):
        log.warning("%d runner(s) did not confirm the downtime lease within %gs: their "
                    "jobs may stop after their usual lease", len(reached) - confirmed,
                    FLUSH_WAIT)
    return len(reached)
