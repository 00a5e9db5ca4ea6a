"""A job's output on the reader's terminal: its control sequences shown, not obeyed.

A job's log is bytes someone else's program wrote; printed raw to a terminal, an
escape sequence can clear the screen, retitle the window, rewrite what was printed
before or (on some terminals) answer back as if typed. `job logs` to a terminal
prints each control byte visibly (`^[`, as `cat -v` does; a UTF-8 C1 control as
`\\x9b`); newlines, tabs and carriage returns (progress bars) pass. `--raw`, or
output that is not a terminal, passes every byte."""

from __future__ import annotations

import re

_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\xc2[\x80-\x9f]")


def _shown(match: re.Match[bytes]) -> bytes:
    raw = match.group()
    if len(raw) == 2:  # a C1 control, UTF-8 encoded
        return b"\\x%02x" % raw[1]
    return b"^?" if raw == b"\x7f" else b"^" + bytes([raw[0] + 0x40])


class Neutraliser:
    """Feed chunks, get them back safe; a C1 control split across two chunks is
    still caught (its first byte waits for the next chunk)."""

    def __init__(self) -> None:
        self._held = b""

    def feed(self, data: bytes) -> bytes:
        data = self._held + data
        self._held = b""
        if data.endswith(b"\xc2"):
            data, self._held = data[:-1], b"\xc2"
        return _CONTROL.sub(_shown, data)

    def end(self) -> bytes:
        held, self._held = self._held, b""
        return held


def neutralised(data: bytes) -> bytes:
    n = Neutraliser()
    return n.feed(data) + n.end()
