"""What the daemon has promised one node's runner: the latest moment its lease may
still hold (`until`, wall clock), by the rule of `nvq.config.lease`.

Every frame the daemon writes renews the runner's lease by the length the runner
holds, which is the length of the last `Heartbeat` it processed. The daemon cannot
see which that is, so it counts the longest it has sent that the runner has not yet
said it holds (`LeaseHeld`, echoing a heartbeat's `seq`): a reload's shorter lease,
or a new daemon's lease after `daemon stop`'s long one, counts only from that echo on,
and what was promised before the echo is then superseded. Pure: the link calls it
with the times of its writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

KEEP = 16  # heartbeats awaiting an echo; older ones are dropped (never supersede)


@dataclass
class _Sent:
    lease: float  # what this heartbeat granted
    until: float = 0.0  # the latest promise of the frames written since it was queued
    longest: float = 0.0  # the longest lease of this heartbeat and those after it


@dataclass
class LeaseBook:
    until: float = 0.0  # 0: nothing promised
    lease: float = 0.0  # the longest lease the runner may hold now
    echoed: int = 0  # the newest heartbeat seq the runner said it holds
    _sent: dict[int, _Sent] = field(default_factory=dict)
    _seq: int = 0

    def heartbeat(self, lease: float) -> int:
        """A `Heartbeat(lease)` is queued: its seq, for the runner to echo."""
        self._seq += 1
        self.lease = max(self.lease, lease)
        for sent in self._sent.values():
            sent.longest = max(sent.longest, lease)
        self._sent[self._seq] = _Sent(lease, longest=lease)
        while len(self._sent) > KEEP:
            del self._sent[min(self._sent)]
        return self._seq

    def wrote(self, at: float) -> None:
        """Frames reached the wire at `at`: each renews the lease the runner holds (a
        runner never granted one holds none: `until` stays 0)."""
        if self.lease > 0:
            self.until = max(self.until, at + self.lease)
        for sent in self._sent.values():
            sent.until = max(sent.until, at + sent.longest)

    def held(self, seq: int) -> None:
        """The runner processed heartbeat `seq`: what was promised before it is
        superseded by what it and the frames after it promised."""
        self.echoed = max(self.echoed, seq)
        sent = self._sent.get(seq)
        if sent is None or sent.until == 0:  # its write not yet counted: keep all
            return
        for older in [s for s in self._sent if s <= seq]:
            del self._sent[older]
        self.until, self.lease = sent.until, sent.longest

    def grant(self, until: float, lease: float) -> None:
        """What an earlier daemon promised (queue.db): honoured until superseded."""
        self.until = max(self.until, until)
        self.lease = max(self.lease, lease)
