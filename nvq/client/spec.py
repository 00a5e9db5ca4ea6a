"""`submit(command, **options)` → the JobSpec the daemon takes: sizes and durations as
people write them ("20GiB", "2h") or as numbers (MiB, seconds)."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from typing import Any

from nvq.client.errors import ClientError
from nvq.model import JobSpec


def _size(text: str) -> int:
    from nvq.values import parse_size

    return parse_size(text)


def _vram(text: str) -> int:
    """A size, or "auto": what the same command reached before (nvq.domain.vram_history)."""
    if text.strip().lower() == "auto":
        from nvq.domain.vram_history import VRAM_AUTO

        return VRAM_AUTO
    return _size(text)


def _duration(text: str) -> float:
    from nvq.values import parse_duration

    return parse_duration(text, allow_zero=True)


# option → (JobSpec field, parser of its text form)
_CONVERTED: dict[str, tuple[str, Callable[[str], Any]]] = {
    "vram": ("vram_mb", _vram),
    "memory": ("memory_mb", _size),
    "timeout": ("timeout", _duration),
    "max_runtime": ("max_runtime", _duration),
}


def job_spec(command: list[str] | str, **options: Any) -> JobSpec:
    """A list is an argv (quoted for the shell); a string runs as a shell command."""
    fields: dict[str, Any] = {}
    for key, value in options.items():
        field, parse = _CONVERTED.get(key, (key, None))
        if parse is not None and isinstance(value, str):
            try:
                value = parse(value)
            except ValueError as exc:
                raise ClientError(f"{key}: {exc}", 2) from None
        fields[field] = value
    unknown = sorted(set(fields) - set(JobSpec.__struct_fields__) - {"command"})
    if unknown:
        raise TypeError(f"submit() got unknown options: {', '.join(unknown)}")
    # Like the CLI: the submitting shell may label its jobs for people to see.
    fields.setdefault("submitter", os.environ.get("NVQ_SUBMITTER", ""))
    body = command if isinstance(command, str) else shlex.join(command)
    return JobSpec(command=body, **fields)
