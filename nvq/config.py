"""`$NVQ_HOME/config.toml` → typed configuration, with errors that name the file, the key
and what is wrong.

STRUCTS ONLY FOR NOW: the loader (`load_config`) is being written.
"""

from __future__ import annotations

from pathlib import Path

import msgspec


class ConfigError(Exception):
    """A malformed config: the message names the file, the key and the problem."""


class NodeConfig(msgspec.Struct, kw_only=True, frozen=True):
    name: str
    host: str
    port: int = 22
    user: str | None = None
    identity: str | None = None  # private key file
    known_hosts: str | None = None  # file; None means ~/.ssh/known_hosts
    home: str = "~/.nvq"  # node-side state directory
    python: str = "python3"  # interpreter on the node with nvq_runner importable
    gpus: list[int] | None = None  # allowlist for new placements; [] = CPU jobs only
    env: dict[str, str] = {}  # extra environment for the runner
    owner: str | None = None


class QueueConfig(msgspec.Struct, kw_only=True, frozen=True):
    local_node: bool = True
    local_node_name: str = "local"
    local_home: str | None = None  # runner home of the local node; default $NVQ_HOME/node
    local_gpus: list[int] | None = None
    local_env: dict[str, str] = {}
    headroom_mb: int = 512
    max_cpu_jobs_per_node: int = 4
    kill_grace: float = 10.0  # seconds between SIGTERM and SIGKILL
    node_grace: float = 120.0  # seconds unreachable before node_down


class Config(msgspec.Struct, kw_only=True, frozen=True):
    path: Path | None = None
    queue: QueueConfig = QueueConfig()
    nodes: list[NodeConfig] = []
