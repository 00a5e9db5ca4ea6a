"""Whether a CLI call has anything to do with `[remote]` at all, decided with nothing
but `os` before anything else loads: a `--local` before the command words to take out,
or a config that may name a `[remote]` section. Only then does nvq.remote (shlex, pathlib, the config
parser) load and decide the rest."""

from __future__ import annotations

from nvq.home_root import config_text

LOCAL_FLAG = "--local"
# Set by the laptop on a forwarded command that reads nothing: end with stdin there
# (nvq.cli.hangup)
END_ON_EOF = "NVQ_END_ON_EOF"


def mentions_remote(root: str) -> bool:
    """Could the config have a [remote] section? Every CLI call asks, so a plain text
    scan comes first; only a config that may have one is parsed (and validated)."""
    try:
        with open(config_text(root), encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return False
    return "remote" in text


def leading_options(argv: list[str]) -> int:
    """How many options come before the command words (`nvq --local job ls`: 1)."""
    for i, arg in enumerate(argv):
        if not arg.startswith("-") or arg == "--":
            return i
    return len(argv)


def may_forward(argv: list[str], root: str) -> bool:
    """False when nvq.remote.maybe_forward would hand `argv` back as it is."""
    return LOCAL_FLAG in argv[: leading_options(argv)] or mentions_remote(root)
