"""Copying every attempt's output to the queue host as it is written.

For each attempt that started on a node the daemon asks the node's runner to follow
both logs from where the copy ends (`Tail` of "both" with each stream's offset,
following until the attempt ends), which sends them in the order the job wrote them
(`nvq_runner.write_order`); each piece is appended to the copy (`nvq.daemon.output.output_copy`) the moment it
arrives. A link that drops leaves the copy incomplete; it is taken up again from its
offsets when the node is back, and when the daemon restarts. An attempt that ended
while its node was away is copied when the node returns; one whose node never
returns keeps what arrived before it went."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterable
from pathlib import Path

import anyio

from nvq.daemon.core.state import State
from nvq.daemon.output.output_copy import (
    CopyState,
    append,
    copy_paths,
    cut_middle,
    read_state,
    records,
    write_state,
)
from nvq.model import JobRecord
from nvq_runner import protocol as p

log = logging.getLogger("nvq.daemon")

STREAMS = ("stdout", "stderr")
# Request ids of their own range on each link: `job logs` streams count from 1.
_requests = itertools.count(1 << 40)

Key = tuple[int, int]  # (job id, attempt)


class OutputCopies:
    def __init__(self, state: State) -> None:
        self.state = state
        self.wanted: dict[Key, CopyState] = {}
        self.active: dict[tuple[int, int, str], int] = {}
        self._grown: dict[Key, anyio.Event] = {}

    # ------------------------------------------------------------ what to copy

    def on_jobs(self, jobs: Iterable[JobRecord]) -> None:  # list[JobRecord] in the protocol
        """Jobs a commit changed: an attempt that started somewhere is copied."""
        for job in jobs:
            if job.node is not None and job.started_at is not None and job.attempt:
                key = (job.id, job.attempt)
                if key not in self.wanted:
                    self._want(key, job.node)

    def _want(self, key: Key, node: str) -> None:
        out_path, state_path = copy_paths(self.state.home, *key)
        st = read_state(state_path)
        if st is None:
            st = CopyState(node=node)
        if not st.complete:
            self.wanted[key] = _recounted(st, out_path)

    def _seed(self) -> None:
        for job in list(self.state.index.running.values()):
            self.on_jobs([job])
        root = self.state.home / "logs"
        for path in root.glob("*/*.json") if root.is_dir() else []:
            try:
                key = (int(path.parent.name), int(path.stem))
            except ValueError:
                continue
            st = read_state(path)
            if st is not None and not st.complete and key not in self.wanted:
                self.wanted[key] = _recounted(st, path.with_suffix(".out"))

    # ------------------------------------------------------------ reading side

    def copying(self, job_id: int, attempt: int) -> bool:
        """Whether more of this attempt's output may still arrive."""
        return (job_id, attempt) in self.wanted

    def grown(self, job_id: int, attempt: int) -> anyio.Event:
        """Set at the copy's next piece (or its end): take it before reading."""
        return self._grown.setdefault((job_id, attempt), anyio.Event())

    async def settled(self, job_id: int, attempt: int, limit: float = 10.0) -> None:
        """Wait (at most `limit` seconds) for the rest of an attempt that has ended to
        arrive while its node is there to send it: a read right after a job's end must
        not show a copy still catching up (its last piece is a frame away)."""
        with anyio.move_on_after(limit):
            while (st := self.wanted.get((job_id, attempt))) is not None:
                node = self.state.nodes.get(st.node)
                if node is None or node.send is None or node.state != "up":
                    return
                await self.grown(job_id, attempt).wait()

    def _signal(self, key: Key) -> None:
        event = self._grown.pop(key, None)
        if event is not None:
            event.set()

    # ------------------------------------------------------------ the loop

    async def run(self) -> None:
        self._seed()
        while True:
            changed = self.state.changed
            self._open_what_can()
            await changed.wait()

    def _open_what_can(self) -> None:
        # Runs at every commit: a copy being followed (most of them) is passed over
        # first, at the cost of one lookup; a followed copy that completes leaves
        # `wanted` in `deliver`.
        for key, st in list(self.wanted.items()):
            if (*key, "both") in self.active:
                continue
            if st.complete:
                self.wanted.pop(key, None)
                continue
            node = self.state.nodes.get(st.node)
            if node is None or node.send is None or node.state != "up" or not node.reconciled:
                continue
            req = next(_requests)
            self.active[(*key, "both")] = req
            node.log_streams[req] = self._deliverer(key, node.name)
            # Both logs in one answer, in the order the job wrote them.
            node.post(
                p.Tail(
                    req=req, job_id=key[0], stream="both", lines=-1, follow=True,
                    max_bytes=0, attempt=key[1], offset=st.offsets.get("stdout", 0),
                    err_offset=st.offsets.get("stderr", 0),
                )
            )

    def _deliverer(self, key: Key, node_name: str) -> Callable[[p.LogData], None]:
        out_path, state_path = copy_paths(self.state.home, *key)
        cap = self.state.config.queue.max_log_size

        def deliver(msg: p.LogData) -> None:
            st = self.wanted.get(key)
            if st is None:
                return
            try:
                # The state is written when it says something the copy cannot: which
                # node (its first piece), a cut (offsets no longer follow from the
                # records), a stream's end. Otherwise the offsets are the records'
                # sums, recounted on a restart: a piece costs one append, no more.
                save = msg.eof or not state_path.exists() or st.generation > 0
                stream = msg.stream or "stdout"
                if msg.data:
                    size = append(out_path, stream, msg.data)
                    st.offsets[stream] = st.offsets.get(stream, 0) + len(msg.data)
                    if size > cap and cut_middle(out_path, cap):
                        st.generation += 1
                        save = True
                if msg.eof:
                    self.active.pop((*key, "both"), None)
                    node = self.state.nodes.get(node_name)
                    dropped = msg.error is not None and (node is None or node.send is None)
                    if not dropped:
                        # ended, or nothing there to copy (it never wrote a log there)
                        st.done.update({s: True for s in STREAMS})
                        if st.complete:
                            self.wanted.pop(key, None)
                if save:
                    write_state(state_path, st)
            except OSError as exc:
                log.warning("copying the output of job %d failed: %s", key[0], exc)
            self._signal(key)

        return deliver


def copy_file(home: Path, job_id: int, attempt: int) -> Path:
    return copy_paths(home, job_id, attempt)[0]


def _recounted(st: CopyState, out_path: Path) -> CopyState:
    """Offsets from the copy's own records (the state file is not rewritten for every
    piece); after a cut they cannot be, and the state file's are kept."""
    if st.generation > 0:
        return st
    try:
        data = out_path.read_bytes()
    except OSError:
        return st
    sums: dict[str, int] = {}
    for stream, body in records(data):
        sums[stream] = sums.get(stream, 0) + len(body)
    st.offsets = {s: max(sums.get(s, 0), st.offsets.get(s, 0)) for s in STREAMS}
    return st
