"""`nvq node add`: a `[[nodes]]` table appended to config.toml, checked first. The
file is only appended to (its comments and layout stay as they were), and only when
the whole file, with the new table, is a config nvq accepts."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

from nvq.config.reader import parse_config
from nvq.config.types import ConfigError


def _value(value: object) -> str:
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return str(value)


def node_table(name: str, fields: dict[str, object], env: dict[str, str]) -> str:
    lines = ["[[nodes]]", f"name = {_value(name)}"]
    lines += [f"{key} = {_value(v)}" for key, v in fields.items() if v is not None]
    if env:
        lines.append("[nodes.env]")
        lines += [f"{json.dumps(k)} = {_value(v)}" for k, v in env.items()]
    return "\n".join(lines) + "\n"


def append_node(path: Path, name: str, fields: dict[str, object], env: dict[str, str]) -> str:
    """Append the node's table to `path` (created if missing); the table appended.
    ConfigError (nothing written) when the name is taken or the result is not valid."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        text = ""
    table = node_table(name, fields, env)
    joined = text + ("" if not text or text.endswith("\n") else "\n") + ("\n" if text else "")
    new = joined + table
    try:
        data = tomllib.loads(new)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: cannot add node {name}: {exc}") from None
    before = tomllib.loads(text) if text else {}
    if any(n.get("name") == name for n in before.get("nodes", []) if isinstance(n, dict)):
        raise ConfigError(f"{path}: a node named {name!r} is already there")
    parse_config(data, path)  # the same checks the daemon makes
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(new)
    if path.exists():
        os.chmod(tmp, path.stat().st_mode & 0o777)
    os.replace(tmp, path)
    return table
