"""One parser per value people write: sizes, durations, job ids, environment pairs;
and the formatting back. The command line, config.toml and manifest.toml all read
their values here, so a value means the same thing, and is refused for the same
reason, wherever it is written.

Each parser raises `ValueError` with a one-line message; the caller puts the flag or
key in front of it.

Sizes are binary: `K`/`KiB`, `M`/`MiB`, `G`/`GiB`, `T`/`TiB` (case-insensitive), and a
bare number means MiB. The decimal spellings `KB`, `MB`, `GB`, `TB` are refused rather
than silently read as binary: `20GB` is ambiguous (20·10⁹ or 20·2³⁰ bytes?) and nvq's
documentation promises binary units, so we ask the user to say which they meant.

Durations: a bare number of seconds, or one or more `<number><unit>` parts with units
`d`, `h`, `m`, `s` in that order, each at most once (`90`, `90s`, `1h30m`, `1.5h`).
A duration is finite, at most 100 years, and more than zero unless the caller says
zero means something (`allow_zero`): a timeout or an interval of 0 is a mistake.

Job ids are positive integers that fit in 64 bits (SQLite's integer).
"""

from __future__ import annotations

import json
import math
import re

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing itself costs a CLI call milliseconds
    from typing import Any

MAX_INT = 2**63 - 1  # SQLite's largest integer: ids, sizes in MiB and counts fit in it
MIN_INT = -(2**63)
MAX_SECONDS = 100 * 365.25 * 86400  # 100 years: anything longer is a typo

# MiB per unit; K is a fraction so KiB round up to whole MiB exactly.
_SIZE_UNITS: dict[str, tuple[int, int]] = {
    "": (1, 1),
    "k": (1, 1024),
    "ki": (1, 1024),
    "kib": (1, 1024),
    "m": (1, 1),
    "mi": (1, 1),
    "mib": (1, 1),
    "g": (1024, 1),
    "gi": (1024, 1),
    "gib": (1024, 1),
    "t": (1024**2, 1),
    "ti": (1024**2, 1),
    "tib": (1024**2, 1),
}
_DECIMAL_UNITS = {"kb": "KiB", "mb": "MiB", "gb": "GiB", "tb": "TiB"}

_NUMBER = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_SIZE_RE = re.compile(rf"\s*({_NUMBER})\s*([a-zA-Z]*)\s*")
# Longest spellings first, so "5 minutes" is not read as "5 m" followed by garbage.
_DURATION_WORDS = {
    "days": "d", "day": "d", "d": "d",
    "hours": "h", "hour": "h", "hrs": "h", "hr": "h", "h": "h",
    "minutes": "m", "minute": "m", "mins": "m", "min": "m", "m": "m",
    "seconds": "s", "second": "s", "secs": "s", "sec": "s", "s": "s",
}  # fmt: skip
_DURATION_PART_RE = re.compile(
    rf"({_NUMBER})\s*({'|'.join(_DURATION_WORDS)})(?![a-z])\s*", re.IGNORECASE
)
_DURATION_SECONDS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
_ID_RE = re.compile(r"[0-9]+")
_ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def show(value: Any) -> str:
    """A value as it would look in a TOML file, short and on one line (for messages)."""
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, bool | int | float | str | list):
        text = json.dumps(value, default=str, ensure_ascii=False)
    else:  # dates and times
        text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# ---------------------------------------------------------------- sizes


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
    from fractions import Fraction  # not at import: every CLI call loads this module

    mib = math.ceil(Fraction(match.group(1)) * Fraction(*_SIZE_UNITS[unit]))
    if mib > MAX_INT:
        raise ValueError(f"invalid size {text!r}: too large")
    return mib


def size_value(value: Any) -> int:
    """A size from a file: a string for `parse_size`, or a whole number of MiB."""
    if isinstance(value, str):
        return parse_size(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_INT:
        return value
    raise ValueError(f'expected a size like "512MiB" or a number of MiB, got {show(value)}')


# ---------------------------------------------------------------- durations


def check_seconds(seconds: float, *, allow_zero: bool = False) -> str | None:
    """What is wrong with a duration in seconds, or None: the rule every duration
    follows, whether it was parsed here or arrived as a number."""
    if math.isnan(seconds):
        return "expected a number of seconds"
    if seconds < 0:
        return "must not be negative"
    if seconds == 0 and not allow_zero:
        return "must be more than 0"
    if seconds > MAX_SECONDS:  # infinity too
        return "more than 100 years"
    return None


def parse_duration(text: str, *, allow_zero: bool = False) -> float:
    """`'1h30m'` → 5400.0 seconds; a bare number is seconds. Units may be spelt out
    (`'5 minutes'`, `'1 hour 30 min'`), as people write them when they quote the value."""
    error = ValueError(
        f"invalid duration {text!r}: expected seconds or a number with a unit, "
        "like 90s, 5m, 1h30m or 2d"
    )
    stripped = text.strip()
    if re.fullmatch(_NUMBER, stripped):
        total = float(stripped)
    else:
        total = 0.0
        position = 0
        last_rank = -1
        units = list(_DURATION_SECONDS)
        for part in _DURATION_PART_RE.finditer(stripped):
            # finditer skips over garbage; insist the parts tile the whole text.
            if part.start() != position:
                raise error
            position = part.end()
            unit = _DURATION_WORDS[part.group(2).lower()]
            rank = units.index(unit)
            if rank <= last_rank:  # "5m1h" or "1m1m" is more likely a typo than intent
                raise error
            last_rank = rank
            total += float(part.group(1)) * _DURATION_SECONDS[unit]
        if position == 0 or position != len(stripped):
            raise error
    problem = check_seconds(total, allow_zero=allow_zero)
    if problem is not None:
        raise ValueError(f"invalid duration {text!r}: {problem}")
    return total


def duration_value(value: Any, *, allow_zero: bool = False) -> float:
    """A duration from a file: a string for `parse_duration`, or a number of seconds."""
    if isinstance(value, str):
        return parse_duration(value, allow_zero=allow_zero)
    if _is_number(value):
        problem = check_seconds(float(value), allow_zero=allow_zero)
        if problem is not None:
            raise ValueError(f"invalid duration {show(value)}: {problem}")
        return float(value)
    raise ValueError(f'expected a duration like "30s" or a number of seconds, got {show(value)}')


def parse_begin(text: str, now: float) -> float:
    """`--begin`: a moment (`2026-12-02T22:00`, `2026-12-02 22:00`, local time unless
    it names its zone) or a delay from `now` (`2h`, `"1 hour 30 min"`, `"after 2h"`,
    `"in 2h"`, as the help says it) → Unix seconds."""
    stripped = text.strip()
    word, _, rest = stripped.partition(" ")
    if word.lower() in ("after", "in") and rest.strip():
        stripped = rest.strip()
    try:
        return now + parse_duration(stripped, allow_zero=True)
    except ValueError:
        pass
    import datetime  # here: every read's table formats durations, few parse dates

    try:
        moment = datetime.datetime.fromisoformat(stripped)
    except ValueError:
        raise ValueError(
            f"invalid --begin {text!r}: expected a time like 2026-12-02T22:00 "
            "or a delay like 2h"
        ) from None
    return moment.timestamp()  # a naive time is local time, as the user reads a clock


def parse_since(text: str, now: float, flag: str = "--since") -> float:
    """`--since 7d` (that long ago) or `--since 2026-11-24` / `2026-11-24T09:00` (local
    time) → Unix seconds."""
    stripped = text.strip()
    try:
        return now - parse_duration(stripped, allow_zero=True)
    except ValueError:
        pass
    import datetime  # here: every read's table formats durations, few parse dates

    try:
        return datetime.datetime.fromisoformat(stripped).timestamp()
    except ValueError:
        raise ValueError(
            f"invalid {flag} {text!r}: expected a time like 2026-11-24T09:00 "
            "or a span like 7d (that long ago)"
        ) from None


# ---------------------------------------------------------------- job ids


def check_id(value: Any) -> str | None:
    """What is wrong with a job id, or None."""
    if not isinstance(value, int) or isinstance(value, bool):
        return f"expected a job id, got {show(value)}"
    if not 0 < value <= MAX_INT:
        return f"job ids are positive integers below 2**63, got {value}"
    return None


def parse_ids(text: str) -> list[int]:
    """`'12,13'` → [12, 13]; blanks around commas are fine, empty text is no ids."""
    ids: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if not _ID_RE.fullmatch(part):
            raise ValueError(f"invalid job ids {text!r}: expected job ids like 12,13")
        problem = check_id(int(part))
        if problem is not None:
            raise ValueError(f"invalid job ids {text!r}: {problem}")
        ids.append(int(part))
    return ids


def ids_value(value: Any) -> list[int]:
    """Job ids from a file: a list of ids, one id, or a string for `parse_ids`."""
    ids: list[int] = []
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, str):
            ids.extend(parse_ids(item))
            continue
        problem = check_id(item)
        if problem is not None:
            raise ValueError(problem)
        ids.append(item)
    return ids


# ---------------------------------------------------------------- environment


def check_env(name: str, value: str) -> str | None:
    """What is wrong with an environment variable for a job or a runner, or None."""
    if not _ENV_NAME_RE.fullmatch(name):
        return (
            f"invalid variable name {show(name)}: use letters, digits and '_', "
            "not starting with a digit"
        )
    if "\0" in value:
        return f"the value of {name} contains a NUL byte"
    return None


def parse_env_pair(text: str) -> tuple[str, str]:
    """`'HF_HOME=/scratch/hf'` → ('HF_HOME', '/scratch/hf'); the value may hold '='."""
    name, sep, value = text.partition("=")
    if not sep or check_env(name, value) is not None:
        raise ValueError(f"invalid variable {text!r}: expected KEY=VALUE with a valid name")
    return name, value


def env_value(value: Any) -> dict[str, str]:
    """An environment table from a file: variable names to strings."""
    if not isinstance(value, dict):
        raise ValueError(f"expected a table of strings, got {show(value)}")
    for name, item in value.items():
        if not isinstance(item, str):
            raise ValueError(f"{name}: expected a string, got {show(item)}")
        problem = check_env(name, item)
        if problem is not None:
            raise ValueError(problem)
    return dict(value)


# ---------------------------------------------------------------- formatting


def format_mib(mb: int) -> str:
    """20480 → '20GiB', 1536 → '1.5GiB', 512 → '512MiB' (two decimals at most)."""
    if mb < 0:
        return "-" + format_mib(-mb)
    for size, unit in ((1024**2, "TiB"), (1024, "GiB")):
        if mb >= size:
            text = f"{mb / size:.2f}".rstrip("0").rstrip(".")
            return text + unit
    return f"{mb}MiB"


def counted(n: int, word: str, plural: str | None = None) -> str:
    """`1 file`, `2 files`, `0 GPUs`: a count with its noun as people write it."""
    return f"{n} {word if n == 1 else plural or word + 's'}"


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
