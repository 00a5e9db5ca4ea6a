"""What a committed change owes the world, as data: the "act" of decide → commit → act.

A transition decides its new rows (a `Tx`) and, beside them, what must follow once they
are durable: kills, starts, acks to a runner, an attempt's last artifact sync, a
placement pass. The caller collects those here and hands both to `Held.commit`, the
one place that writes, mirrors and then carries them out, always in the same order
(see `State.act`). Nothing is sent before the write that justifies it is on disk, and
a write that fails sends nothing. The model is distributed's
`WorkerState.handle_stimulus(...) -> Instructions`.

`state.kick()` outside `State.act` is left only for wake-ups that follow no commit: the
daemon's start, a sample showing more room, an artifact sync that finished (memory
only), a reloaded config, a drained cluster, a pilot that went away.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from nvq.daemon.core.nodes import NodeRuntime
from nvq.model import JobRecord, Reap


@dataclass(frozen=True, slots=True)
class Ended:
    """An attempt that exited on `node`: its last artifacts are fetched before its job
    may run again. `kept`: False when the runner saw nothing in its artifacts folder."""

    node: NodeRuntime
    job: JobRecord | None
    attempt: int
    kept: bool = True


@dataclass(slots=True)
class Effects:
    """The follow-ups of one commit, carried out in the order of the fields."""

    # Nodes now reconciled with the database: their kills and starts may go out.
    reconciled: list[NodeRuntime] = field(default_factory=list)
    # Owed kills: sent to nodes connected and reconciled now, the rest on reconnect.
    kills: list[Reap] = field(default_factory=list)
    # Kills sent at once (reconciling, recovering: the node is talking to us now).
    kills_now: list[tuple[NodeRuntime, Reap]] = field(default_factory=list)
    # A runner's journal applied through a seq: remembered, and acknowledged.
    acks: list[tuple[NodeRuntime, int]] = field(default_factory=list)
    # Attempts placed on a node: `Start` (naming the job's newest artifacts tree).
    starts: list[JobRecord] = field(default_factory=list)
    ended: list[Ended] = field(default_factory=list)
    # A placement pass: something changed that may let a waiting job start.
    kick: bool = False

    def __bool__(self) -> bool:
        return bool(
            self.reconciled or self.kills or self.kills_now or self.acks or self.starts
            or self.ended or self.kick
        )


class Actions(Protocol):
    """What carries out starts and ended attempts (both may move artifacts first):
    `nvq.daemon.artifacts.artifact_syncs.ArtifactSyncs`, registered on the state."""

    def post_start(self, node: NodeRuntime, job: JobRecord) -> None: ...

    def attempt_ended(
        self, node: NodeRuntime, job: JobRecord | None, attempt: int, *, kept: bool = True
    ) -> None: ...
