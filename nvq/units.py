"""Sizes and durations as people write them, and back.

Sizes are binary: `K`/`KiB`, `M`/`MiB`, `G`/`GiB`, `T`/`TiB` (case-insensitive), and a
bare number means MiB. The decimal spellings `KB`, `MB`, `GB`, `TB` are refused rather
than silently read as binary: `20GB` is ambiguous (20·10⁹ or 20·2³⁰ bytes?) and nvq's
documentation promises binary units, so we ask the user to say which they meant.

Durations: a bare number of seconds, or one or more `<number><unit>` parts with units
`d`, `h`, `m`, `s` in that order, each at most once (`90`, `90s`, `1h30m`, `1.5h`).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

# MiB per unit; K is a fraction so KiB round up to whole MiB exactly.
_SIZE_UNITS: dict[str, Fraction] = {
    "": Fraction(1),
    "k": Fraction(1, 1024),
    "ki": Fraction(1, 1024),
    "kib": Fraction(1, 1024),
    "m": Fraction(1),
    "mi": Fraction(1),
    "mib": Fraction(1),
    "g": Fraction(1024),
    "gi": Fraction(1024),
    "gib": Fraction(1024),
    "t": Fraction(1024**2),
    "ti": Fraction(1024**2),
    "tib": Fraction(1024**2),
}
_DECIMAL_UNITS = {"kb": "KiB", "mb": "MiB", "gb": "GiB", "tb": "TiB"}

_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)"
_SIZE_RE = re.compile(rf"\s*({_NUMBER})\s*([a-zA-Z]*)\s*")
_DURATION_PART_RE = re.compile(rf"({_NUMBER})\s*([dhms])\s*", re.IGNORECASE)
_DURATION_SECONDS = {"d": 86400, "h": 3600, "m": 60, "s": 1}


def parse_size(text: str) -> int:
    """`'20GiB'` → 20480: a size in whole MiB, rounded up (`1K` → 1)."""
    match = _SIZE_RE.fullmatch(text)
    unit = match.group(2).lower() if match else ""
    if match and unit in _DECIMAL_UNITS:
        binary = _DECIMAL_UNITS[unit]
        raise ValueError(
            f"invalid size {text!r}: units are binary, write "
            f"{match.group(1)}{binary} ({binary}, not {match.group(2)})"
        )
    if not match or unit not in _SIZE_UNITS:
        raise ValueError(
            f"invalid size {text!r}: expected a number with a binary unit, like 20GiB or 512MiB"
        )
    # Fraction keeps "1.5GiB" exact; ceil so a request is never silently shrunk.
    return math.ceil(Fraction(match.group(1)) * _SIZE_UNITS[unit])


def parse_duration(text: str) -> float:
    """`'1h30m'` → 5400.0 seconds; a bare number is seconds."""
    error = ValueError(
        f"invalid duration {text!r}: expected seconds or a number with a unit, "
        "like 90s, 5m, 1h30m or 2d"
    )
    stripped = text.strip()
    if re.fullmatch(_NUMBER, stripped):
        return float(stripped)
    total = 0.0
    position = 0
    last_rank = -1
    units = list(_DURATION_SECONDS)
    for part in _DURATION_PART_RE.finditer(stripped):
        # finditer skips over garbage; insist the parts tile the whole text.
        if part.start() != position:
            raise error
        position = part.end()
        rank = units.index(part.group(2).lower())
        if rank <= last_rank:  # "5m1h" or "1m1m" is more likely a typo than intent
            raise error
        last_rank = rank
        total += float(part.group(1)) * _DURATION_SECONDS[part.group(2).lower()]
    if position == 0 or position != len(stripped):
        raise error
    return total


def format_mib(mb: int) -> str:
    """20480 → '20GiB', 1536 → '1.5GiB', 512 → '512MiB' (two decimals at most)."""
    if mb < 0:
        return "-" + format_mib(-mb)
    for size, unit in ((1024**2, "TiB"), (1024, "GiB")):
        if mb >= size:
            text = f"{mb / size:.2f}".rstrip("0").rstrip(".")
            return text + unit
    return f"{mb}MiB"


def format_duration(seconds: float) -> str:
    """45 → '45s', 192 → '3m12s', 7500 → '2h05m', 93600 → '1d02h'.

    Two fields at most: enough to read at a glance, and columns stay narrow.
    """
    if seconds < 0:
        return "-" + format_duration(-seconds)
    whole = round(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours:02d}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"
