"""Reading one value of config.toml: the checks every section reader shares, each
turning a raw TOML value into a typed one or a `ConfigError` that names the file, the
key and the problem."""

from __future__ import annotations

import grp
import math
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nvq.config.types import ConfigError
from nvq.values import duration_value, env_value, show, size_value

# Node names appear in lanes (`node:gpu`), --node prefixes and file names, so keep them
# to characters that need no quoting anywhere.
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


# A field's validator: (raw TOML value, key path) → the typed value.
Convert = Callable[[Any, str], Any]


class FieldReader:
    """The leaf readers of one config file; section readers build on them."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, key: str, problem: str) -> ConfigError:
        return ConfigError(f"{self.path}: {key}: {problem}")

    # -- leaf values ---------------------------------------------------------------

    def table(self, value: Any, key: str, allowed: set[str]) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(key, f"expected a table, got {show(value)}")
        for name in value:
            if name not in allowed:
                where = f"{key}.{name}" if key else name
                known = ", ".join(sorted(allowed))
                raise self.fail(where, f"unknown key (known keys: {known})")
        return value

    def string(self, value: Any, key: str) -> str:
        if not isinstance(value, str) or not value:
            raise self.fail(key, f"expected a non-empty string, got {show(value)}")
        return value

    def name(self, value: Any, key: str) -> str:
        text = self.string(value, key)
        if not NAME_RE.fullmatch(text):
            raise self.fail(
                key,
                f"invalid node name {show(text)}: use letters, digits, '.', '_' and '-', "
                "starting with a letter or digit",
            )
        return text

    def boolean(self, value: Any, key: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(key, f"expected true or false, got {show(value)}")
        return value

    def integer(self, value: Any, key: str, low: int, high: int | None = None) -> int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        if not ok or value < low or (high is not None and value > high):
            wanted = (
                f"an integer from {low} to {high}" if high is not None else f"an integer >= {low}"
            )
            raise self.fail(key, f"expected {wanted}, got {show(value)}")
        return int(value)

    def size(self, value: Any, key: str) -> int:
        try:
            return size_value(value)
        except ValueError as exc:
            raise self.fail(key, str(exc)) from None

    def bytes_size(self, value: Any, key: str) -> int:
        """A size in bytes (written like any size: "1MiB", or a number of MiB)."""
        size = self.size(value, key) * 1024 * 1024
        if size <= 0:
            raise self.fail(key, "must be more than 0")
        return size

    def duration(self, value: Any, key: str) -> float:
        """A timeout or an interval: more than zero."""
        try:
            return duration_value(value)
        except ValueError as exc:
            raise self.fail(key, str(exc)) from None

    def delay(self, value: Any, key: str) -> float:
        """A wait before acting, where zero means at once."""
        try:
            return duration_value(value, allow_zero=True)
        except ValueError as exc:
            raise self.fail(key, str(exc)) from None

    def gpu_list(self, value: Any, key: str) -> list[int]:
        if not isinstance(value, list):
            raise self.fail(key, f"expected a list of GPU indices like [0, 1], got {show(value)}")
        gpus = [self.integer(item, f"{key}[{i}]", 0) for i, item in enumerate(value)]
        if len(set(gpus)) != len(gpus):
            raise self.fail(key, f"GPU indices repeat in {show(value)}")
        return gpus

    def string_list(self, value: Any, key: str) -> list[str]:
        if not isinstance(value, list):
            raise self.fail(key, f"expected a list of strings, got {show(value)}")
        return [self.string(item, f"{key}[{i}]") for i, item in enumerate(value)]

    def env(self, value: Any, key: str) -> dict[str, str]:
        if isinstance(value, dict):
            for name, item in value.items():
                if not isinstance(item, str):
                    raise self.fail(f"{key}.{name}", f"expected a string, got {show(item)}")
        try:
            return env_value(value)
        except ValueError as exc:
            raise self.fail(key, str(exc)) from None

    def group(self, value: Any, key: str) -> str:
        name = self.string(value, key)
        try:
            grp.getgrnam(name)
        except KeyError:
            raise self.fail(key, f"no group {show(name)} on this host") from None
        return name

    def path_value(self, value: Any, key: str) -> str:
        # A file on the queue host, so ~ means this user's home here.
        return os.path.expanduser(self.string(value, key))

    def positive_number(self, value: Any, key: str) -> float:
        bad = isinstance(value, bool) or not isinstance(value, int | float)
        if bad or not math.isfinite(value) or value <= 0:
            raise self.fail(key, f"expected a positive number, got {show(value)}")
        return float(value)

    def choice(self, value: Any, key: str, choices: tuple[str, ...]) -> str:
        if value not in choices:
            raise self.fail(key, f"expected one of {', '.join(choices)}, got {show(value)}")
        return str(value)
