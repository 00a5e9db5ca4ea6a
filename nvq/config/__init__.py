"""`$NVQ_HOME/config.toml` → typed configuration, with errors that name the file, the key
and what is wrong.

Every error is a `ConfigError` with a one-line message `<file>: <key path>: <problem>`,
e.g. `~/.nvq/config.toml: nodes[2].port: expected an integer from 1 to 65535, got "abc"`.
`nodes[i]` counts the `[[nodes]]` tables from 0, in file order.

```toml
[queue]
local_node = true            # run jobs on the queue host itself
local_node_name = "local"
local_gpus = [0, 1]          # allowlist; [] = CPU jobs only; absent = all cards
headroom = "512MiB"          # or an integer number of MiB
max_cpu_jobs_per_node = 4
kill_grace = "10s"           # or a number of seconds
node_grace = "2m"
lease = "98s"                # default: node_grace - kill_grace - margin (nvq.config.lease)
max_downtime = "1h"          # the lease `daemon stop` grants: planned downtime kills nothing

[[nodes]]
name = "box406"              # letters, digits, '.', '_' and '-'
host = "box406.lab"
port = 22
user = "me"
identity = "~/.ssh/id_ed25519"
gpus = [0, 1, 2, 3]
env = { CUDA_CACHE_PATH = "/scratch/cuda" }

[remote]                     # optional: forward every command to nvq on the queue host
host = "queue.lab"
```
"""

from typing import TYPE_CHECKING, Any

from nvq.config.types import (
    BackupConfig,
    ClusterConfig,
    Config,
    ConfigError,
    EmailChannel,
    NodeConfig,
    NotifyConfig,
    QueueConfig,
    RemoteConfig,
    SubmitConfig,
    UserConfig,
    WebhookChannel,
)

if TYPE_CHECKING:
    from nvq.config.reader import load_config, parse_config

__all__ = [
    "BackupConfig",
    "ClusterConfig",
    "Config",
    "ConfigError",
    "EmailChannel",
    "NodeConfig",
    "NotifyConfig",
    "QueueConfig",
    "RemoteConfig",
    "SubmitConfig",
    "UserConfig",
    "WebhookChannel",
    "load_config",
    "parse_config",
]


def __getattr__(name: str) -> Any:
    # The reader (tomllib and every section's parser) loads only for a call that reads
    # the file: the control tables name SubmitConfig, and every typed CLI call imports
    # them, where the reader cost ~4.5 ms.
    if name in ("load_config", "parse_config"):
        from nvq.config import reader

        return getattr(reader, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
