"""`[[clusters]]` tables → `ClusterConfig`, with errors that name the file and key.

A cluster is a Slurm login node reached over SSH like a node (host, port, user,
identity, known_hosts), plus what each pilot job asks Slurm for and how the pilots
scale. `parse_clusters` is called by the config loader with the raw TOML list.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import msgspec

from nvq.config import ConfigError
from nvq.values import parse_duration, parse_size

# Pilots are named "<cluster>/<job id>", so a cluster name is a node name without "/".
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_ENV_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ClusterConfig(msgspec.Struct, kw_only=True, frozen=True):
    name: str
    host: str  # the login node
    port: int = 22
    user: str | None = None
    identity: str | None = None
    known_hosts: str | None = None
    partition: str | None = None  # None: the cluster's default partition
    gpus_per_pilot: int = 1  # → --gres=gpu:N; 0 asks for no GPUs
    cpus: int | None = None  # → --cpus-per-task
    memory_mb: int | None = None  # → --mem
    time: float | None = None  # walltime in seconds; None: the partition's default
    account: str | None = None
    qos: str | None = None
    sbatch_args: list[str] = []  # passed to sbatch as they are
    min_pilots: int = 0
    max_pilots: int = 1
    scale_after: float = 30.0  # seconds a fitting job waits before a pilot is requested
    idle_release: float = 600.0  # seconds a pilot may stay idle before it is cancelled
    python: str = "python3"  # on the compute nodes, with nvq_runner importable
    env: dict[str, str] = {}  # extra environment for the pilot's runner
    setup: list[str] = []  # shell lines run before the runner, e.g. "module load cuda"
    allow_untimed: bool = False  # may jobs without a time limit run on pilots?
    vacate_before: float = 300.0  # untimed jobs leave this long before the allocation ends
    home: str = "~/.nvq/pilots"  # pilot runner homes: <home>/<job id>, on the cluster


_Convert = Callable[[Any, str], Any]


def _show(value: Any) -> str:
    if isinstance(value, dict):
        return "a table"
    text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


class _ClusterParser:
    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, key: str, problem: str) -> ConfigError:
        return ConfigError(f"{self.path}: {key}: {problem}")

    def string(self, value: Any, key: str) -> str:
        if not isinstance(value, str) or not value:
            raise self.fail(key, f"expected a non-empty string, got {_show(value)}")
        return value

    def name(self, value: Any, key: str) -> str:
        text = self.string(value, key)
        if not _NAME_RE.fullmatch(text):
            raise self.fail(
                key,
                f"invalid cluster name {_show(text)}: use letters, digits, '.', '_' and '-', "
                "starting with a letter or digit",
            )
        return text

    def path_value(self, value: Any, key: str) -> str:
        # A file on the queue host, so ~ means this user's home here.
        return os.path.expanduser(self.string(value, key))

    def integer(self, value: Any, key: str, low: int, high: int | None = None) -> int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        if not ok or value < low or (high is not None and value > high):
            wanted = (
                f"an integer from {low} to {high}" if high is not None else f"an integer >= {low}"
            )
            raise self.fail(key, f"expected {wanted}, got {_show(value)}")
        return int(value)

    def boolean(self, value: Any, key: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(key, f"expected true or false, got {_show(value)}")
        return value

    def size(self, value: Any, key: str) -> int:
        if isinstance(value, str):
            try:
                return parse_size(value)
            except ValueError as exc:
                raise self.fail(key, str(exc)) from None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
        raise self.fail(key, f'expected a size like "64GiB" or a number of MiB, got {_show(value)}')

    def duration(self, value: Any, key: str) -> float:
        if isinstance(value, str):
            try:
                return parse_duration(value, allow_zero=True)
            except ValueError as exc:
                raise self.fail(key, str(exc)) from None
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            return float(value)
        raise self.fail(
            key, f'expected a duration like "8h" or a number of seconds, got {_show(value)}'
        )

    def walltime(self, value: Any, key: str) -> float:
        seconds = self.duration(value, key)
        if seconds < 60:
            raise self.fail(key, f"a pilot's walltime must be at least 1m, got {_show(value)}")
        return seconds

    def string_list(self, value: Any, key: str) -> list[str]:
        if not isinstance(value, list):
            raise self.fail(key, f"expected a list of strings, got {_show(value)}")
        return [self.string(item, f"{key}[{i}]") for i, item in enumerate(value)]

    def lines(self, value: Any, key: str) -> list[str]:
        # One command or a list of them; each runs in the pilot's shell before the runner.
        return [value] if isinstance(value, str) and value else self.string_list(value, key)

    def env(self, value: Any, key: str) -> dict[str, str]:
        if not isinstance(value, dict):
            raise self.fail(key, f"expected a table of strings, got {_show(value)}")
        for name, item in value.items():
            if not _ENV_KEY_RE.fullmatch(name):
                raise self.fail(f"{key}.{name}", "not a valid environment variable name")
            if not isinstance(item, str):
                raise self.fail(f"{key}.{name}", f"expected a string, got {_show(item)}")
        return dict(value)

    def fields(self) -> dict[str, _Convert]:
        return {
            "name": self.name,
            "host": self.string,
            "port": lambda v, k: self.integer(v, k, 1, 65535),
            "user": self.string,
            "identity": self.path_value,
            "known_hosts": self.path_value,
            "partition": self.string,
            "gpus_per_pilot": lambda v, k: self.integer(v, k, 0),
            "cpus": lambda v, k: self.integer(v, k, 1),
            "memory": self.size,
            "time": self.walltime,
            "account": self.string,
            "qos": self.string,
            "sbatch_args": self.string_list,
            "min_pilots": lambda v, k: self.integer(v, k, 0),
            "max_pilots": lambda v, k: self.integer(v, k, 1),
            "scale_after": self.duration,
            "idle_release": self.duration,
            "python": self.string,
            "env": self.env,
            "setup": self.lines,
            "allow_untimed": self.boolean,
            "vacate_before": self.duration,
            "home": self.string,  # a path on the cluster: ~ is expanded there
        }

    def cluster(self, item: Any, prefix: str) -> ClusterConfig:
        fields = self.fields()
        if not isinstance(item, dict):
            raise self.fail(prefix, f"expected a table, got {_show(item)}")
        for key in item:
            if key not in fields:
                known = ", ".join(sorted(fields))
                raise self.fail(f"{prefix}.{key}", f"unknown key (known keys: {known})")
        for required in ("name", "host"):
            if required not in item:
                raise self.fail(
                    f"{prefix}.{required}",
                    "missing (every cluster needs a name and its login node's host)",
                )
        out = {key: fields[key](v, f"{prefix}.{key}") for key, v in item.items()}
        if "memory" in out:
            out["memory_mb"] = out.pop("memory")
        config = ClusterConfig(**out)
        if config.min_pilots > config.max_pilots:
            raise self.fail(
                f"{prefix}.min_pilots",
                f"{config.min_pilots} is more than max_pilots ({config.max_pilots})",
            )
        if config.time is not None and config.vacate_before >= config.time:
            raise self.fail(
                f"{prefix}.vacate_before",
                "must be shorter than the pilot's walltime (time), or nothing could run",
            )
        return config


def parse_clusters(value: Any, path: Path, taken: Iterable[str] = ()) -> list[ClusterConfig]:
    """The `[[clusters]]` list. `taken` holds node names a cluster may not reuse (its
    pilots' names start with the cluster's). Raises `ConfigError` on the first problem."""
    parser = _ClusterParser(path)
    if not isinstance(value, list):
        raise parser.fail("clusters", f"expected [[clusters]] tables, got {_show(value)}")
    taken = set(taken)
    seen: dict[str, int] = {}
    clusters: list[ClusterConfig] = []
    for i, item in enumerate(value):
        prefix = f"clusters[{i}]"
        cluster = parser.cluster(item, prefix)
        if cluster.name in seen:
            raise parser.fail(
                f"{prefix}.name",
                f"{_show(cluster.name)} is already the name of clusters[{seen[cluster.name]}]",
            )
        if cluster.name in taken:
            raise parser.fail(f"{prefix}.name", f"{_show(cluster.name)} is already a node's name")
        seen[cluster.name] = i
        clusters.append(cluster)
    return clusters
