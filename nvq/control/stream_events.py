"""One line of `nvq queue events --follow --json`: the event, the words it answers to
(`--kind`), and, when it ended a job, how (`end`). The daemon makes these for a
subscription that asks for them (`Subscribe.detail`), so an agent watching the
command's output learns a job's outcome from the one line that says it ended."""

from __future__ import annotations

from typing import Any

import msgspec

from nvq.model import Event

# What `end.stderr_tail` keeps of the job's tail: a wake-up line, not a log.
TAIL_LINES = 10
TAIL_CHARS = 2000


class JobEnd(msgspec.Struct, kw_only=True):
    """How the job ended, on the event that ended it. `result` and `stderr_tail` are
    null for a job whose output the reader may not see (members_read), and for an end
    that no longer stands (`current` false: the job was requeued or retried since)."""

    state: str  # completed, failed, timeout, cancelled, lost
    exit_code: int | None = None
    signal: int | None = None
    reason: str | None = None
    result: Any = None  # the job's result.json (`nvq job result`)
    stderr_tail: str | None = None  # its last lines (at most 10, 2,000 characters)
    current: bool = True  # the job is still in this state


class StreamEvent(Event, kw_only=True):
    """An event as `queue events --follow --json` prints it: one compact line each."""

    # its `--kind` words (nvq.domain.event_classes)
    classes: list[str] = msgspec.field(default_factory=list)
    end: JobEnd | None = None  # set on an event that ended a job (class `end`)


stream_batch_decoder = msgspec.msgpack.Decoder(list[StreamEvent])


def tail_of(text: str | None) -> str | None:
    """The last `TAIL_LINES` lines of `text`, cut to `TAIL_CHARS` from the end."""
    if not text:
        return None
    lines = text.rstrip("\n").split("\n")[-TAIL_LINES:]
    return "\n".join(lines)[-TAIL_CHARS:]
