"""The pieces every table is made of: columns, clipped cells, times as ages."""

from __future__ import annotations

import time
import unicodedata

from nvq.values import format_duration

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def safe(text: str) -> str:
    """`text` with every control character written as an escape (`\\x1b`, `\\n`):
    a job's name or command comes from its submitter, and raw it could move the
    cursor, recolour or fake lines of another user's terminal."""
    if text.isprintable():
        return text
    return "".join(_escape(ch) for ch in text)


def _escape(ch: str) -> str:
    if ch in _NAMED:
        return _NAMED[ch]
    if ch == " " or unicodedata.category(ch)[0] not in "CZ":
        return ch
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def ago(t: float | None, now: float | None = None) -> str:
    if t is None:
        return "-"
    return format_duration(max(0.0, (now or time.time()) - t)) + " ago"


def table(headers: list[str], rows: list[list[str]]) -> str:
    if not rows:
        return "  ".join(headers)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    for r in rows:
        lines.append("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())
    return "\n".join(lines)


def clip(text: str | None, n: int) -> str:
    if not text:
        return ""
    text = safe(text)
    return text if len(text) <= n else text[: n - 1] + "…"
