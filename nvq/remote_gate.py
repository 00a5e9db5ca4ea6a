"""Whether a CLI call has anything to do with `[remote]` at all, decided with nothing
but `os` before anything else loads: a `--local` to take out, or a config that may
name a `[remote]` section. Only then does nvq.remote (shlex, pathlib, the config
parser) load and decide the rest."""

from __future__ import annotations

from nvq.home_root import config_text

LOCAL_FLAG = "--local"


def mentions_remote(root: str) -> bool:
    """Could the config have a [remote] section? Every CLI call asks, so a plain text
    scan comes first; only a config that may have one is parsed (and validated)."""
    try:
        with open(config_text(root), encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return False
    return "remote" in text


def may_forward(argv: list[str], root: str) -> bool:
    """False when nvq.remote.maybe_forward would hand `argv` back as it is."""
    return LOCAL_FLAG in argv or mentions_remote(root)
