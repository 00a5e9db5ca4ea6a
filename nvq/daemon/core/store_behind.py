"""A node that knows jobs queue.db does not: the store was restored from an older
backup, replaced by a fresh one, or lost records (a damaged WAL). What the node
reports about them is never applied to other jobs; it is said once, as an alert."""

from __future__ import annotations

from nvq.model import NewAlert
from nvq_runner import protocol as p

KIND = "store_behind"


class Gaps:
    """Per node, what its runner knows that queue.db did not (`nvq queue check` shows
    both): job ids queue.db has no row for (`missing`), and those it had forgotten and
    made again from the runner's records (`recovered`)."""

    def __init__(self) -> None:
        self.missing: dict[str, set[int]] = {}
        self.recovered: dict[str, set[int]] = {}


def hello_alert(node: str, hello: p.Hello, known: int) -> NewAlert | None:
    """The runner saw job ids past the last one this queue.db ever assigned."""
    if hello.max_job_id <= known:
        return None
    return NewAlert(
        kind=KIND,
        severity="error",
        key=f"{KIND}:ids:{node}:{hello.queue_id}:{hello.max_job_id}",
        message=(
            f"node {node}'s journal names jobs up to {hello.max_job_id} that queue.db does "
            f"not know (its ids end at {known}): restored from an older backup, or records "
            f"lost? New job ids continue after {hello.max_job_id}"
        ),
        node=node,
    )


def _what(ev: p.JournaledEvent) -> str:
    if isinstance(ev, p.JobExited):
        if ev.signal:
            return f"killed by signal {ev.signal}"
        return f"exit {ev.exit_code}" if ev.exit_code is not None else "ended"
    if isinstance(ev, p.JobStarted):
        return "started"
    if isinstance(ev, p.JobLost):
        return f"lost: {ev.reason}"
    if isinstance(ev, p.AttemptFenced):
        return "stopped: its lease lapsed"
    if isinstance(ev, p.JobSignalled):
        return "signalled before its timeout"
    if isinstance(ev, p.SetupPhase):
        return "set up" if ev.done else "setting up"
    return f"could not start: {ev.error}"


def event_alert(node: str, journal_id: str, ev: p.JournaledEvent) -> NewAlert:
    """A journaled event about an attempt queue.db never dispatched. Raised for the
    event that ends the attempt (once per attempt); a start is only logged, since an
    attempt still running is killed as an orphan and reports its end."""
    return NewAlert(
        kind=KIND,
        severity="error",
        key=f"{KIND}:job:{node}:{journal_id}:{ev.job_id}:{ev.attempt}",
        message=(
            f"node {node} ran job {ev.job_id} ({_what(ev)}) that queue.db does not know: "
            "restored from an older backup?"
        ),
        node=node,
    )
