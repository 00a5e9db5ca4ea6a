"""`--signal SIG@DELAY` (Slurm's form): the signal a job is sent, and how long before
its end, so it can checkpoint before a `--timeout` (or a preemption) stops it.

Stored on the job as its normal form, `NAME@SECONDS` (`USR1@300`); the runner gets
the signal's number and the delay (`Start.signal`, `Start.signal_before`)."""

from __future__ import annotations

import signal as _signal

from nvq.values import parse_duration

DEFAULT_DELAY = 60.0  # seconds, as Slurm's --signal without @
# The signals a job may ask for: those its wrapper outlives (nvq_runner/wrapper.sh
# handles them; a signal it did not handle would end the wrapper, not warn the job),
# and those that by default end nothing.
ALLOWED = ("USR1", "USR2", "TERM", "INT", "HUP", "QUIT", "ALRM", "URG", "WINCH")


def parse_signal(text: str) -> tuple[str, float]:
    """`USR1@5m`, `SIGUSR2@90`, `10@30s`, `USR1` (60 s) → (`USR1`, seconds before the
    end). ValueError with a sentence a user can act on."""
    name, at, delay_text = text.strip().partition("@")
    sig = _signal_name(name.strip())
    if not at:
        return sig, DEFAULT_DELAY
    try:
        delay = parse_duration(delay_text.strip(), allow_zero=True)
    except ValueError:
        raise ValueError(
            f"invalid --signal {text!r}: the delay after @ must be a duration like 5m or 90"
        ) from None
    return sig, delay


def _signal_name(name: str) -> str:
    upper = name.upper()
    if upper.isdigit():
        try:
            found = _signal.Signals(int(upper)).name.removeprefix("SIG")
        except ValueError:
            raise ValueError(f"invalid --signal {name!r}: no signal has that number") from None
    else:
        found = upper.removeprefix("SIG")
        if "SIG" + found not in _signal.Signals.__members__:
            raise ValueError(
                f"invalid --signal {name!r}: not a signal name (one of {', '.join(ALLOWED)})"
            )
    if found not in ALLOWED:
        raise ValueError(
            f"invalid --signal {name!r}: SIG{found} is not one a job can be warned with "
            f"(one of {', '.join(ALLOWED)})"
        )
    return found


def normal(text: str) -> str:
    """The stored form of a valid `--signal`."""
    name, delay = parse_signal(text)
    return f"{name}@{delay:g}"


def number(stored: str) -> tuple[int, float]:
    """(signal number, seconds before the end) of a stored `--signal` ("" → (0, 0))."""
    if not stored:
        return 0, 0.0
    name, delay = parse_signal(stored)
    return int(_signal.Signals["SIG" + name]), delay


def check(stored: str, timeout: float | None) -> str | None:
    """What is wrong with a job's `--signal` beside its `--timeout`, or None."""
    if not stored:
        return None
    try:
        _, delay = parse_signal(stored)
    except ValueError as exc:
        return str(exc).removeprefix("invalid --signal ")
    if timeout is not None and delay >= timeout:
        return (
            f"is sent {delay:g}s before the end, but --timeout is {timeout:g}s: "
            "the delay must be shorter than the timeout"
        )
    return None
