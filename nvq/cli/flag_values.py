"""Flag values → what a request needs, each failure one line naming the flag (exit 2).
The value parsers themselves live in nvq.values; these wrappers only say which flag.
Without typer: `job submit`'s fast path (nvq.cli.fast_submit) parses with these too."""

from __future__ import annotations

import sys
from pathlib import Path

from nvq.client.errors import ClientError
from nvq.values import parse_duration, parse_size

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from nvq.domain.submit_options import SubmitOption


class CliError(ClientError):
    """A bad flag, or a failure on this side of the socket: shown like the daemon's
    refusals, as one line with its exit status."""


def size(value: str | None, flag: str) -> int:
    """MiB; 0 when the flag was not given."""
    if value is None:
        return 0
    try:
        return parse_size(value)
    except ValueError as exc:
        raise CliError(f"{flag}: {exc}", 2) from None


def duration(value: str | None, flag: str) -> float | None:
    if value is None:
        return None
    try:
        return parse_duration(value, allow_zero=True)
    except ValueError as exc:
        raise CliError(f"{flag}: {exc}", 2) from None


def ids(value: str | None, flag: str) -> list[int]:
    """`12,13` → [12, 13]; nothing → []."""
    if not value:
        return []
    try:
        found = [int(part) for part in value.replace(" ", "").split(",") if part]
    except ValueError:
        raise CliError(f"{flag} {value!r}: expected job ids like 12,13", 2) from None
    if any(i <= 0 for i in found):
        raise CliError(f"{flag} {value!r}: job ids are positive", 2)
    return found


def env_pairs(values: list[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in values:
        key, sep, val = item.partition("=")
        if not sep or not key or not key.replace("_", "a").isalnum() or key[0].isdigit():
            raise CliError(f"--env {item!r}: expected KEY=VALUE with a valid variable name", 2)
        env[key] = val
    return env


def read_local(path: Path, flag: str) -> str:
    """A local file's text; `-` reads stdin (a forwarded command gets the file there)."""
    if str(path) == "-":
        return sys.stdin.read()
    try:
        return path.read_text()
    except OSError as exc:
        raise CliError(f"{flag} {path}: {exc.strerror}", 2) from None


def notify_on(text: str | None) -> list[str] | None:
    """--notify-on as a request holds it; None when the flag was not given."""
    if text is None:
        return None
    from nvq.domain.notify_on import parse_notify_on

    try:
        return parse_notify_on(text)
    except ValueError as exc:
        raise CliError(str(exc), 2) from None


def retries_on(text: str) -> str:
    from nvq.domain.retry_policy import parse_retries_on

    try:
        return parse_retries_on(text)
    except ValueError as exc:
        raise CliError(str(exc), 2) from None


def begin(text: str | None) -> float | None:
    if text is None:
        return None
    import time

    from nvq.values import parse_begin

    try:
        return parse_begin(text, time.time())
    except ValueError as exc:
        raise CliError(str(exc), 2) from None


def signal(text: str | None) -> str:
    if text is None:
        return ""
    from nvq.domain.job_signal import normal

    try:
        return normal(text)
    except ValueError as exc:
        raise CliError(str(exc), 2) from None


# A submit option's reader (`SubmitOption.read`): its value as typed, and its flag for
# the message → the JobSpec field's value.
def vram(value: str | None, flag: str) -> int:
    """`--vram SIZE` in MiB; `auto`: sized by the daemon from what the same command
    reached before (nvq.domain.vram_history)."""
    if value is not None and value.strip().lower() == "auto":
        from nvq.domain.vram_history import VRAM_AUTO

        return VRAM_AUTO
    return size(value, flag)


READERS: dict[str, Callable[[Any, str], Any]] = {
    "size": size,
    "vram": vram,
    "duration": duration,
    "ids": ids,
    "env": lambda values, _flag: env_pairs(values),
    "notify_on": lambda text, _flag: notify_on(text),
    "retries_on": lambda text, _flag: retries_on(text),
    "begin": lambda text, _flag: begin(text),
    "signal": lambda text, _flag: signal(text),
}


def read(option: SubmitOption, value: Any) -> Any:
    """The JobSpec value of `option` given as `value` (CliError, exit 2, when it is not
    one)."""
    return READERS[option.read](value, option.flag) if option.read else value
