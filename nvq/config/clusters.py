"""The `[[clusters]]` tables → `ClusterConfig`, with errors that name the file and key.

A cluster is a Slurm login node reached over SSH like a node (host, port, user,
identity, known_hosts), plus what each pilot job asks Slurm for and how the pilots
scale. The config reader calls `parse_clusters` with the raw TOML list.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from nvq.config.fields import NAME_RE, Convert, FieldReader
from nvq.config.types import ClusterConfig
from nvq.values import show

GPUS_FLAGS = ("--gres", "--gpus", "--gpus-per-node")


class _ClusterReader(FieldReader):
    def name(self, value: Any, key: str) -> str:
        # Pilots are named "<cluster>/<job id>", so a cluster name is a node name.
        text = self.string(value, key)
        if not NAME_RE.fullmatch(text):
            raise self.fail(
                key,
                f"invalid cluster name {show(text)}: use letters, digits, '.', '_' and '-', "
                "starting with a letter or digit",
            )
        return text

    def memory(self, value: Any, key: str) -> int:
        size = self.size(value, key)
        if size <= 0:
            raise self.fail(key, "must be more than 0")
        return size

    def walltime(self, value: Any, key: str) -> float:
        seconds = self.delay(value, key)
        if seconds < 60:
            raise self.fail(key, f"a pilot's walltime must be at least 1m, got {show(value)}")
        return seconds

    def gres(self, value: Any, key: str) -> str:
        text = self.string(value, key)
        kind, _, model = text.partition(":")
        if kind != "gpu" or ":" in model or (model and not NAME_RE.fullmatch(model)):
            raise self.fail(key, f"expected \"gpu\" or \"gpu:TYPE\", got {show(text)}")
        return text

    def gpus_flag(self, value: Any, key: str) -> str:
        text = self.string(value, key)
        if text not in GPUS_FLAGS:
            raise self.fail(key, f"expected one of {', '.join(GPUS_FLAGS)}, got {show(text)}")
        return text

    def lines(self, value: Any, key: str) -> list[str]:
        # One command or a list of them; each runs in the pilot's shell before the runner.
        return [value] if isinstance(value, str) and value else self.string_list(value, key)

    def fields(self) -> dict[str, Convert]:
        return {
            "name": self.name,
            "host": self.string,
            "port": lambda v, k: self.integer(v, k, 1, 65535),
            "user": self.string,
            "identity": self.path_value,
            "known_hosts": self.path_value,
            "partition": self.string,
            "gpus_per_pilot": lambda v, k: self.integer(v, k, 0),
            "gres": self.gres,
            "gpus_flag": self.gpus_flag,
            "cpus": lambda v, k: self.integer(v, k, 1),
            "memory": self.memory,
            "time": self.walltime,
            "account": self.string,
            "qos": self.string,
            "sbatch_args": self.string_list,
            "min_pilots": lambda v, k: self.integer(v, k, 0),
            "max_pilots": lambda v, k: self.integer(v, k, 1),
            "scale_after": self.delay,
            "idle_release": self.delay,
            "python": self.string,
            "env": self.env,
            "setup": self.lines,
            "allow_untimed": self.boolean,
            "vacate_before": self.delay,
            "home": self.string,  # a path on the cluster: ~ is expanded there
        }

    def cluster(self, item: Any, prefix: str) -> ClusterConfig:
        fields = self.fields()
        table = self.table(item, prefix, set(fields))
        for required in ("name", "host"):
            if required not in table:
                raise self.fail(
                    f"{prefix}.{required}",
                    "missing (every cluster needs a name and its login node's host)",
                )
        out = {key: fields[key](v, f"{prefix}.{key}") for key, v in table.items()}
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
    reader = _ClusterReader(path)
    if not isinstance(value, list):
        raise reader.fail("clusters", f"expected [[clusters]] tables, got {show(value)}")
    taken = set(taken)
    seen: dict[str, int] = {}
    clusters: list[ClusterConfig] = []
    for i, item in enumerate(value):
        prefix = f"clusters[{i}]"
        cluster = reader.cluster(item, prefix)
        if cluster.name in seen:
            raise reader.fail(
                f"{prefix}.name",
                f"{show(cluster.name)} is already the name of clusters[{seen[cluster.name]}]",
            )
        if cluster.name in taken:
            raise reader.fail(f"{prefix}.name", f"{show(cluster.name)} is already a node's name")
        seen[cluster.name] = i
        clusters.append(cluster)
    return clusters

