"""Printing a command's result: one JSON document with --json, else its text."""

from __future__ import annotations

import sys
from typing import Any

import msgspec


def emit(data: Any, as_json: bool, text: str | None = None, *, reveal: bool = False) -> None:
    """`reveal`: show the values of secret-looking variables in jobs' environments
    (hidden by default, see `hide_secrets`)."""
    if as_json:
        if not reveal:
            data = hide_secrets(msgspec.to_builtins(data))
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(data), indent=2).decode() + "\n")
    elif text is not None:
        print(text)


JOB_ENV_KEYS = ("env", "env_captured")


def hide_secrets(doc: Any) -> Any:
    """A document with the values of secret-looking variables (`*TOKEN*`, `*KEY*`…)
    of every job's environment replaced by `***`. A job is a mapping that has an
    `env_captured` key."""
    from nvq.world.environment import masked

    if isinstance(doc, list):
        return [hide_secrets(item) for item in doc]
    if not isinstance(doc, dict):
        return doc
    out = {key: hide_secrets(value) for key, value in doc.items()}
    if "env_captured" in out:
        for key in JOB_ENV_KEYS:
            if isinstance(out.get(key), dict):
                out[key] = masked(out[key])
    return out
