"""Watching a running `job shell` session for idleness (nvq.domain.idle_release): no
keystroke from its terminal and no activity on its cards for `[queue]
interactive_idle` → a warning in the terminal and a `session_idle` event; still
nothing `interactive_grace` later → the job is ended, its cards freed."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

import anyio

from nvq.daemon.core.apply import apply
from nvq.daemon.core.held import locked
from nvq.daemon.handlers.context import Context
from nvq.domain import transitions
from nvq.domain.idle_release import cards_active, decide
from nvq.model import JobRecord, NewEvent, Tx
from nvq.values import format_duration

BY = "idle release"
LONGEST_TICK = 30.0


def card_use(ctx: Context, job: JobRecord) -> tuple[list[int | None], int]:
    """(utilisation of each of the job's cards, the job's own memory on them) as its
    node's last sample says."""
    node = ctx.state.nodes.get(job.node or "")
    sample = node.sample if node is not None else None
    if sample is None:
        return [], 0
    mine = [g for g in sample.gpus if g.index in job.gpus]
    memory = sum(p.used_mb or 0 for g in mine for p in g.processes if p.job_id == job.id)
    return [g.util_percent for g in mine], memory


async def watch_idle(
    ctx: Context, job: JobRecord, last_input: Callable[[], float],
    say: Callable[[bytes], Awaitable[None]],
) -> None:
    """Until cancelled (the session ended) or the session is released for idleness.
    `last_input`: the monotonic time of the terminal's last keystroke."""
    queue = ctx.state.config.queue
    idle, grace = queue.interactive_idle, queue.interactive_grace
    if idle <= 0:
        return
    tick = min(LONGEST_TICK, max(0.05, min(idle, grace or idle) / 4))
    active_at = time.monotonic()
    warned_at: float | None = None
    last_memory: int | None = None
    while True:
        await anyio.sleep(tick)
        utils, memory = card_use(ctx, job)
        now = time.monotonic()
        if cards_active(utils, memory, last_memory):
            active_at = now
        last_memory = memory
        active_at = max(active_at, last_input())
        action = decide(now, active_at, warned_at, idle, grace)
        if action == "warn":
            warned_at = now
            await say(f"\r\n[nvq] this session has been idle for {format_duration(idle)}: it "
                      f"ends in {format_duration(grace)} unless you type something\r\n".encode())
            async with locked(ctx.state) as held:
                data = {"idle_s": idle, "ends_in_s": grace}
                await held.commit(Tx(events=[NewEvent("session_idle", job.id, job.node, data)]))
        elif action == "unwarn":
            warned_at = None
        elif action == "end":
            await say(b"\r\n[nvq] ending this idle session\r\n")
            async with locked(ctx.state) as held:
                live = await ctx.state.get_job(job.id)
                if not live.state.finished:
                    await apply(held, [live], lambda j: transitions.cancel(
                        j, now=time.time(), by=BY))
            return
