"""The environment a job carries from the shell that submitted it, and how it meets a
node's own.

Captured at submit: everything but the variables that only mean something in that
shell (its terminal, its SSH session, its display, nvq's own settings). On the local
node a job gets the capture as it was. On a remote node: the node's login
environment, then the captured variables less those naming paths of the submitting
machine that the node lacks (reported, so `job show` can say why `VIRTUAL_ENV` did
not follow), then the node's configured env, then `--env`. Whatever nvq sets
(`CUDA_VISIBLE_DEVICES`, `NVQ_*`) is applied last and always wins.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping

from nvq.world.secret_names import MASK, is_secret, masked
from nvq_runner.node_env import (
    NO_SUCH_PATH,
    NODE_IDENTITY,
    NODE_OWN,
    PATH_LISTS,
    Dropped,
    NodeEnv,
    local_env,
    remote_env,
)

__all__ = [
    "MASK", "NODE_IDENTITY", "NODE_OWN", "NO_SUCH_PATH", "PATH_LISTS", "Dropped",
    "NodeEnv", "capture", "is_secret", "local_env", "masked", "remote_env",
]

SHELL_ONLY = frozenset({
    "PWD", "OLDPWD", "SHLVL", "_", "DISPLAY", "XDG_RUNTIME_DIR", "CUDA_VISIBLE_DEVICES",
})
SHELL_ONLY_PREFIXES = ("SSH_", "WAYLAND_", "TERM", "NVQ_")


def _excluded(name: str, extra: Iterable[str]) -> bool:
    if name in SHELL_ONLY or name.startswith(SHELL_ONLY_PREFIXES):
        return True
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in extra)


def capture(environ: Mapping[str, str], exclude: Iterable[str] = ()) -> dict[str, str]:
    """The submitting shell's environment as a job should carry it. `exclude` adds
    names or glob patterns (`[submit] env_exclude`)."""
    extra = list(exclude)
    return {k: v for k, v in sorted(environ.items()) if not _excluded(k, extra)}


