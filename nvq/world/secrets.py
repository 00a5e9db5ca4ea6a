"""What is shown of a job's environments: the values of secret-looking variables
(`*TOKEN*`, `*KEY*`…) replaced by `***`, wherever a reply holds a job."""

from __future__ import annotations

from typing import Any

import msgspec

from nvq.model import Job
from nvq.world.secret_names import is_secret, masked


def hide_secrets(data: Any, *, listed: bool = False) -> Any:
    """`data` with every job's secret-looking variables hidden; what holds no such job
    is returned as it is (no copy: `job ls --json` of a long queue stays cheap).

    A job in a list (`job ls`, `queue status`, `job wait`...) is shown without its
    captured environment (`env_captured: null`): some 30 variables a job, which an
    agent reading a list pays for in its context. `job show` has them."""
    if isinstance(data, Job):
        fix: dict[str, Any] = {
            name: masked(env)
            for name in ("env", "env_captured")
            if (env := getattr(data, name)) and any(map(is_secret, env))
        }
        if listed and data.env_captured is not None:
            fix["env_captured"] = None
        return msgspec.structs.replace(data, **fix) if fix else data
    if isinstance(data, dict) and "command" in data:
        # a job the daemon built as a dict (`job show`): what the CLI decodes as a Job
        fix = {
            name: masked(env)
            for name in ("env", "env_captured")
            if isinstance(env := data.get(name), dict) and any(map(is_secret, env))
        }
        if listed and data.get("env_captured") is not None:
            fix["env_captured"] = None
        return {**data, **fix} if fix else data
    if isinstance(data, dict):
        # a document holding jobs (`{"jobs": [...], "more": false}`)
        walked = {k: hide_secrets(v) for k, v in data.items()}
        same = all(walked[k] is v for k, v in data.items())
        return data if same else walked
    if isinstance(data, list):
        items = [hide_secrets(item, listed=True) for item in data]
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


def shown_json(data: Any) -> str:
    """`data` as `--json` prints it: secrets hidden, two-space indents, no newline."""
    return msgspec.json.format(msgspec.json.encode(hide_secrets(data)), indent=2).decode()
