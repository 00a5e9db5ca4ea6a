"""What the daemon knows about one node right now (in memory, rebuilt on restart)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from nvq.config import NodeConfig
from nvq.domain.card_marks import CardMark, unacked
from nvq.domain.lease_book import LeaseBook
from nvq_runner.protocol import DaemonMsg, Hello, LogData, NodeImages, Sample

Sender = Callable[[DaemonMsg], bool]  # False when the frame could not be queued


@dataclass
class NodeRuntime:
    name: str
    config: NodeConfig | None  # None for the local node
    allow: list[int] | None = None  # cards open to new placements
    state: str = "connecting"  # connecting | up | down
    hello: Hello | None = None
    sample: Sample | None = None
    last_sample: Sample | None = None  # what `sample` was when the link went (views)
    last_seen: float | None = None
    error: str | None = None
    # `error` is one retrying cannot fix (NodeUnreachable.permanent): alerted at once.
    error_permanent: bool = False
    refused_alerted: str = ""  # the outage and error last alerted (one event per outage)
    drained: bool = False
    removed: bool = False  # gone from config.toml: drained, forgotten once idle (reload)
    ignored: bool = False
    stopped: bool = False  # ignored because `nvq node stop` stopped its runner
    journal_id: str = ""
    applied_seq: int = 0
    # Placement waits until the runner's journal has been replayed and its jobs
    # reconciled: before that the daemon's picture of the node may be stale.
    reconciled: bool = False
    replay_until: int = 0
    send: Sender | None = None
    log_streams: dict[int, Callable[[LogData], None]] = field(default_factory=dict)
    down_since: float | None = None
    # The lease its runner may still hold (nvq.config.lease): no job of this node
    # runs elsewhere before it has run out. Kept in queue.db (lease_grants.py).
    lease_book: LeaseBook = field(default_factory=LeaseBook)
    link_scope: anyio.CancelScope | None = None  # cancels the current connection
    # The open channel (an SSH one has `.connection`, which artifact syncs use for SFTP).
    channel: Any = None
    # The connection does not reach the node's disk (a pilot's ends on the login node):
    # artifact syncs read over the runner link instead (link_reads.py).
    disk_over_link: bool = False
    # How to run `nvq_runner ARGS` beside the runner where the connection's own shell
    # is not on the node (a pilot: an `srun --overlap` step of its allocation).
    runner_step: str | None = None
    busy_mode: str = "auto"  # `nvq queue busy NODE on|off|auto`
    busy_reported: bool | None = None  # the runner's last word on its owner's activity
    busy_detail: dict[str, Any] = field(default_factory=dict)
    # Its cards' marks in queue.db (domain/card_marks.py): unhealthy or drained ones
    # stay out of placement until an admin returns them (`queue resume NODE:IDX`).
    card_marks: dict[int, CardMark] = field(default_factory=dict)
    images: NodeImages | None = None  # the runner's last list of its runtime's store
    # Each running job's progress line and when it was first seen (a sample's time):
    # how far a job is at a known moment tells when it ends (domain/start_estimate.py).
    progress_seen: dict[int, tuple[str, float]] = field(default_factory=dict)

    @property
    def usable_cards(self) -> list[int] | None:
        """Cards the queue may ever use: the configured allowlist, within what a
        Slurm allocation granted the runner (a pilot). None: every card."""
        granted = self.hello.allocated if self.hello is not None else None
        if granted is None:
            return self.allow
        if self.allow is None:
            return granted
        return [i for i in self.allow if i in granted]

    @property
    def out_cards(self) -> set[int]:
        """Cards out of placement for now: marked out (unhealthy or drained), or
        reported unhealthy (Xid, ECC, …) with evidence no admin returned it despite."""
        out = {i for i, m in self.card_marks.items() if m.out}
        if self.sample is not None:
            out |= {g.index for g in self.sample.gpus
                    if unacked(self.card_marks.get(g.index), g.faults)}
        return out

    @property
    def open_cards(self) -> list[int] | None:
        """Cards open to new placements now. None: every card."""
        cards, sick = self.usable_cards, self.out_cards
        if not sick or self.hello is None:
            return cards
        base = cards if cards is not None else [g.index for g in self.hello.gpus]
        return [i for i in base if i not in sick]

    @property
    def owner(self) -> str | None:
        return self.config.owner if self.config else None

    @property
    def host(self) -> str | None:
        return self.config.host if self.config else None

    @property
    def accepting(self) -> bool:
        # Without a first sample the daemon cannot see foreign work on the cards.
        return (
            self.state == "up"
            and self.reconciled
            and self.sample is not None
            and not self.drained
            and not self.removed
            and not self.ignored
        )

    @property
    def shown_state(self) -> str:
        if self.ignored:
            return "stopped" if self.stopped else "ignored"
        if self.state == "up" and self.drained:
            return "draining"
        return self.state

    def post(self, msg: DaemonMsg) -> bool:
        """Queue a frame for the runner; False when the node is not connected."""
        return self.send(msg) if self.send is not None else False

    def mark_seen(self) -> None:
        self.last_seen = time.time()
