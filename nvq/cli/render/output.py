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
            data = hide_secrets(data)
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(data), indent=2).decode() + "\n")
    elif text is not None:
        print(text)


def hide_secrets(data: Any) -> Any:
    """`data` with the values of secret-looking variables (`*TOKEN*`, `*KEY*`…) in
    every job's environments replaced by `***`; what holds no such job is returned
    as it is (no copy: `job ls --json` of a long queue stays cheap)."""
    from nvq.model import Job
    from nvq.world.environment import is_secret, masked

    if isinstance(data, Job):
        fix = {
            name: masked(env)
            for name in ("env", "env_captured")
            if (env := getattr(data, name)) and any(map(is_secret, env))
        }
        return msgspec.structs.replace(data, **fix) if fix else data
    if isinstance(data, list):
        items = [hide_secrets(item) for item in data]
        return data if all(a is b for a, b in zip(items, data, strict=True)) else items
    if isinstance(data, msgspec.Struct):
        fix = {}
        for name in data.__struct_fields__:
            value = getattr(data, name)
            if isinstance(value, (list, msgspec.Struct)):
                hidden = hide_secrets(value)
                if hidden is not value:
                    fix[name] = hidden
        return msgspec.structs.replace(data, **fix) if fix else data
    return data
