"""The pieces every table is made of: columns, clipped cells, times as ages."""

from __future__ import annotations

import time

from nvq.values import format_duration


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
    text = text.replace("\n", " ")
    return text if len(text) <= n else text[: n - 1] + "…"
