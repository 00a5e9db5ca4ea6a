"""Flag values → what a request needs, each failure one line naming the flag (exit 2).
The value parsers themselves live in nvq.values; these wrappers only say which flag.
The ones `job submit`'s fast path needs too live in nvq.cli.flag_values (no typer)."""

from __future__ import annotations

import datetime as dt
import sys
import time
from pathlib import Path
from typing import Any

import typer
from click.core import ParameterSource

from nvq.cli.flag_values import CliError, duration, env_pairs, ids, read_local, size
from nvq.model import JobSpec
from nvq.values import parse_duration

__all__ = [
    "CliError", "duration", "ended_before", "env_pairs", "ids", "manifest_fields",
    "read_local", "size", "with_manifest",
]


def ended_before(text: str | None) -> float | None:
    """`--before 2025-01-31`, an ISO date-time (local time unless it says), or an age
    like `7d` (ended more than 7 days ago)."""
    if text is None:
        return None
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        try:
            return time.time() - parse_duration(text, allow_zero=True)
        except ValueError:
            raise CliError(
                f"--before {text!r}: expected a date (2025-01-31), a date-time or an age (7d)", 2
            ) from None
    return when.timestamp()


def manifest_fields(path: Path) -> dict[str, Any]:
    """A manifest.toml's job fields; `-` reads it from stdin."""
    from nvq.manifest import ManifestError, load

    try:
        if str(path) == "-":
            return load(Path("manifest.toml"), sys.stdin.read())
        return load(path)
    except ManifestError as exc:
        raise CliError(str(exc), 2) from None


def with_manifest(spec: JobSpec, path: Path, ctx: typer.Context) -> JobSpec:
    """`job submit --manifest`: the manifest, overridden by every flag given."""
    from nvq.manifest import PARAM_FIELDS, merge

    given = {
        field
        for param, field in PARAM_FIELDS.items()
        if ctx.get_parameter_source(param) is ParameterSource.COMMANDLINE
    }
    return merge(spec, manifest_fields(path), given)
