"""How the environment a job carried from the submitting shell meets a node's own.

On the local node a job gets the capture as it was. On a remote node: the node's login
environment, then the captured variables less those naming paths of the submitting
machine that the node lacks (reported, so `job show` can say why `VIRTUAL_ENV` did
not follow), then the node's configured env, then `--env`. Whatever nvq sets
(`CUDA_VISIBLE_DEVICES`, `NVQ_*`) is applied last and always wins. It lives in the
runner because the runner, on the node, is what can tell which paths exist there.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

# colon-separated lists of directories, filtered entry by entry on a remote node
PATH_LISTS = frozenset({
    "PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "LIBRARY_PATH", "CPATH", "MANPATH",
    "PKG_CONFIG_PATH", "XDG_DATA_DIRS", "XDG_CONFIG_DIRS", "INFOPATH",
})
NO_SUCH_PATH = "no such path there"
# who and where the job is on a remote node: the node's login says, not the submitter's
NODE_IDENTITY = frozenset({"HOME", "USER", "LOGNAME", "SHELL", "MAIL", "HOSTNAME", "HOST"})
NODE_OWN = "the node's own"


def environ_with(prefix: str) -> dict[str, str]:
    """The runner's own variables named `prefix…`. By name first: `os.environ.items()`
    decodes every value of the environment (five times the cost), and a launch asked
    twice."""
    return {k: os.environ[k] for k in os.environ if k.startswith(prefix)}


@dataclass(frozen=True)
class Dropped:
    """A captured value (or one entry of a path list) left behind on a node."""

    name: str
    value: str
    reason: str
    entry: bool = False  # one entry of a path list, not the whole variable

    def __str__(self) -> str:
        if self.entry:
            return f"{self.name} entry {self.value} ({self.reason})"
        return f"{self.name}={self.value} ({self.reason})"


@dataclass
class NodeEnv:
    env: dict[str, str]
    dropped: list[Dropped] = field(default_factory=list)


def _is_path_list(name: str, value: str) -> bool:
    if name in PATH_LISTS:
        return True
    parts = [p for p in value.split(":") if p]
    return len(parts) > 1 and all(p.startswith("/") for p in parts)


def _carry(
    name: str, value: str, login: Mapping[str, str], exists: Callable[[str], bool],
) -> tuple[str | None, list[Dropped]]:
    """The value to carry for one captured variable (None: drop it), and what was
    left out of it."""
    if _is_path_list(name, value):
        kept: list[str] = []
        dropped: list[Dropped] = []
        for part in value.split(":"):
            if part.startswith("/") and not exists(part):
                dropped.append(Dropped(name, part, NO_SUCH_PATH, entry=True))
            else:
                kept.append(part)
        if not any(kept):
            return None, [Dropped(name, value, NO_SUCH_PATH)]
        # the node's own entries stay reachable after the submitter's
        for part in login.get(name, "").split(":"):
            if part and part not in kept:
                kept.append(part)
        return ":".join(kept), dropped
    if value.startswith("/") and not exists(value):
        return None, [Dropped(name, value, NO_SUCH_PATH)]
    return value, []


def local_env(
    captured: Mapping[str, str],
    *,
    node: Mapping[str, str] | None = None,
    cli: Mapping[str, str] | None = None,
    nvq: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The job's environment on the queue host's own node: the capture as it was."""
    return {**captured, **(node or {}), **(cli or {}), **(nvq or {})}


def remote_env(
    captured: Mapping[str, str],
    *,
    login: Mapping[str, str],
    path_exists: Callable[[str], bool],
    node: Mapping[str, str] | None = None,
    cli: Mapping[str, str] | None = None,
    nvq: Mapping[str, str] | None = None,
) -> NodeEnv:
    """The job's environment on a remote node. `path_exists` answers for the node
    (the runner passes `os.path.exists`); `login` is what `bash -lc env` gives there.
    Who the job runs as (`HOME`, `USER`, `SHELL`…) comes from the login, not the
    submitter, wherever the login names it."""
    env = dict(login)
    dropped: list[Dropped] = []
    for name, value in captured.items():
        if name in NODE_IDENTITY:
            if name in login and login[name] != value:
                dropped.append(Dropped(name, value, NODE_OWN))
            if name in login:
                continue
        carried, lost = _carry(name, value, login, path_exists)
        dropped += lost
        if carried is not None:
            env[name] = carried
    env.update(node or {})
    env.update(cli or {})
    env.update(nvq or {})
    return NodeEnv(env, dropped)
