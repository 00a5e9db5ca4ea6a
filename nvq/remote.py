"""The remote CLI: with a `[remote]` section, `nvq ARGS` runs `nvq ARGS` on the queue
host over SSH, before typer parses anything here.

It uses the system `ssh` binary, not asyncssh: ssh already passes the remote command's
stdout and stderr through as separate streams, as they are written (so `job logs -f`
and `job wait` stream), and exits with the remote exit status. Doing the same with
asyncssh would mean an event loop, a PTY-less channel pump and exit-status plumbing in
every CLI call, for the same result; it also keeps a forwarded call from importing
anything heavy. The config's port, user, identity and known_hosts become ssh options;
host keys are checked strictly and nothing is asked interactively (BatchMode).

A local file an option names (`job submit --script FILE`, `--manifest FILE`) is sent
as the remote command's stdin, and the option becomes `-` there.

`job submit` takes the directory, environment and snapshot of this machine: the
snapshot is taken here and its blobs the queue host lacks cross first, over a call of
their own (nvq.world.forward). `job pull` is not forwarded: it runs here and fetches
the job's files through the queue host as a tar stream, so they land on this machine.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from nvq.remote_gate import LOCAL_FLAG, mentions_remote

TYPE_CHECKING = False  # not from typing: every CLI call imports this module

if TYPE_CHECKING:  # every CLI call imports this module; most never parse a config
    from nvq.config import RemoteConfig, SubmitConfig

# Commands about *this* machine: `project test` runs the job here, by definition.
# `skill install` writes here; `mcp` serves here, each of its calls a CLI call that
# is forwarded in turn.
NEVER_FORWARDED = frozenset({"project", "skill", "mcp"})
FILE_OPTIONS = ("--script", "--manifest")
SSH_UNREACHABLE = 255
# `job pull` runs on this machine and fetches through the queue host (hidden option)
PULL_FLAG = "--over-remote"
# the hidden `queue` command that takes a forwarded snapshot's blobs
RECEIVE_BLOBS = "receive-blobs"
# Commands that are a terminal on the queue host's side: ssh gives them a pty there
# (window changes and Ctrl-C then cross as ssh carries them) when this end has one.
TERMINALS = (["job", "shell"], ["job", "exec"])
# `job forward` listens on this machine and relays each connection through the
# queue host (`job forward --stdio` there, one ssh call per connection).
FORWARD_FLAG = "--over-remote"
# Commands that take this machine's directory, environment and snapshot with them.
SUBMITS = (["job", "submit"], ["job", "shell"])


class RemoteError(Exception):
    pass


def split_local(argv: list[str]) -> tuple[list[str], bool]:
    """Remove `--local` (before any `--`): run this one command against the local queue."""
    head, sep, tail = _split_dashdash(argv)
    local = LOCAL_FLAG in head
    return [a for a in head if a != LOCAL_FLAG] + sep + tail, local


def _split_dashdash(argv: list[str]) -> tuple[list[str], list[str], list[str]]:
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], ["--"], argv[i + 1 :]
    return list(argv), [], []


def file_argument(argv: list[str]) -> tuple[list[str], Path | None]:
    """Find the one local-file option and point it at stdin instead."""
    head, sep, tail = _split_dashdash(argv)
    out: list[str] = []
    found: list[Path] = []
    i = 0
    while i < len(head):
        arg = head[i]
        name, eq, value = arg.partition("=")
        if name in FILE_OPTIONS and eq:
            if value != "-":
                found.append(Path(value))
            out.append(f"{name}=-")
        elif arg in FILE_OPTIONS and i + 1 < len(head):
            if head[i + 1] != "-":
                found.append(Path(head[i + 1]))
            out += [arg, "-"]
            i += 1
        else:
            out.append(arg)
        i += 1
    if len(found) > 1:
        raise RemoteError(
            "over [remote], one local file goes with a command: give --script or "
            "--manifest, not both (put the command in the manifest)"
        )
    return out + sep + tail, found[0] if found else None


def remote_command(cfg: RemoteConfig, argv: list[str], submitter: str | None) -> str:
    """The shell command line the queue host runs (ssh sends one string)."""
    env = []
    if cfg.home:
        env.append(f"NVQ_HOME={shlex.quote(cfg.home)}")
    if submitter:
        env.append(f"NVQ_SUBMITTER={shlex.quote(submitter)}")
    prefix = f"env {' '.join(env)} " if env else ""
    # cfg.nvq is taken as written (it may be "python3 -m nvq"); arguments are quoted.
    return f"exec {prefix}{cfg.nvq} {shlex.join(argv)}".rstrip()


def ssh_argv(cfg: RemoteConfig, command: str, *, stdin: bool, tty: bool = False) -> list[str]:
    args = [
        "ssh",
        # no PTY: stdout and stderr stay apart, bytes pass unchanged (a terminal
        # command is the exception: it wants one)
        "-t" if tty else "-T",
        "-o",
        "BatchMode=yes",
        "-o",
        "LogLevel=ERROR",  # ssh's own chatter would change stderr
        "-p",
        str(cfg.port),
    ]
    if not stdin:
        args.append("-n")
    if cfg.identity:
        args += ["-i", cfg.identity, "-o", "IdentitiesOnly=yes"]
    if cfg.known_hosts:
        args += ["-o", f"UserKnownHostsFile={cfg.known_hosts}", "-o", "StrictHostKeyChecking=yes"]
    if cfg.user:
        args += ["-l", cfg.user]
    if cfg.jump:
        args += ["-o", f"ProxyCommand={jump_command(cfg)}"]
    return [*args, cfg.host, command]


def jump_command(cfg: RemoteConfig) -> str:
    """`[remote] jump` as a ProxyCommand: an `ssh -W` through the bastion with the same
    identity and known_hosts (`-J` would drop them: command-line options apply to the
    destination only)."""
    from nvq.config import NodeConfig
    from nvq.config.jumps import parse_hops

    assert cfg.jump is not None
    (hop,) = parse_hops(cfg.jump, NodeConfig(name="remote", host=cfg.host))
    args = ["ssh", "-T", "-o", "BatchMode=yes", "-o", "LogLevel=ERROR", "-p", str(hop.port)]
    if cfg.identity:
        args += ["-i", cfg.identity, "-o", "IdentitiesOnly=yes"]
    if cfg.known_hosts:
        args += ["-o", f"UserKnownHostsFile={cfg.known_hosts}", "-o", "StrictHostKeyChecking=yes"]
    if hop.user:
        args += ["-l", hop.user]
    return shlex.join([*args, "-W", "%h:%p", hop.host])


def forward(cfg: RemoteConfig, argv: list[str]) -> int:
    """Run `nvq argv` on the queue host; returns its exit status."""
    import subprocess  # only a forwarded call pays for it

    argv, local_file = file_argument(argv)
    stdin_file = None
    if local_file is not None:
        try:
            stdin_file = open(local_file, "rb")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise RemoteError(f"{local_file}: {exc.strerror}") from None
    try:
        command = remote_command(cfg, argv, os.environ.get("NVQ_SUBMITTER"))
        tty = argv[:2] in TERMINALS and sys.stdin.isatty()
        reads_stdin = stdin_file is not None or "-" in argv or argv[:2] in TERMINALS
        proc = subprocess.run(
            ssh_argv(cfg, command, stdin=reads_stdin, tty=tty),
            stdin=stdin_file,
            check=False,
        )
    except FileNotFoundError:
        raise RemoteError("[remote] needs the ssh client, and none is installed") from None
    finally:
        if stdin_file is not None:
            stdin_file.close()
    if proc.returncode == SSH_UNREACHABLE:
        print(f"nvq: cannot reach the queue host {cfg.host} over ssh", file=sys.stderr)
    return proc.returncode


def maybe_forward(argv: list[str], home: Path) -> tuple[list[str], int | None]:
    """(argv without --local, the exit status when the command ran remotely)."""
    argv, local = split_local(argv)
    if local or not argv or argv[0] in NEVER_FORWARDED:
        return argv, None
    if not mentions_remote(str(home)):
        return argv, None  # the common case, decided without parsing TOML
    from nvq.config import load_config

    config = load_config(home)
    cfg = config.remote
    if cfg is None:
        return argv, None
    if argv[:2] == ["job", "pull"]:
        # runs here, fetching through the queue host: the files belong on this machine
        return [*argv[:2], PULL_FLAG, *argv[2:]], None
    if argv[:2] == ["job", "forward"]:
        # runs here: the local port belongs on this machine
        return [*argv[:2], FORWARD_FLAG, *argv[2:]], None
    try:
        return argv, forward(cfg, with_submit_world(argv, config.submit, cfg, home))
    except ForwardedExit as exc:
        return argv, exc.code


class ForwardedExit(Exception):
    """The forward stopped before the command ran there; its reason is already out."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def with_submit_world(
    argv: list[str], submit: SubmitConfig, cfg: RemoteConfig, home: Path,
) -> list[str]:
    """A forwarded `job submit` takes this machine's directory, environment and
    snapshot with it: the snapshot's blobs the queue host lacks go first, by a call of
    their own, and the submit then names the snapshot."""
    head, sep, tail = _split_dashdash(argv)
    if head[:2] not in SUBMITS:
        return argv
    needs_none = submit.in_place or any(
        arg in ("--no-snapshot", "--in-place") or arg.split("=", 1)[0] == "--workdir"
        for arg in head
    )
    extra = [f"--from-cwd={os.getcwd()}"]
    if not needs_none or "--snapshot" in head:
        extra.append(f"--from-snapshot={_send_snapshot(cfg, home, submit)}")
    if "--no-env" not in head:
        from nvq.cli.submit_world import encode_env
        from nvq.world.environment import capture

        extra.append(f"--from-env={encode_env(capture(os.environ, submit.env_exclude))}")
    return head[:2] + extra + head[2:] + sep + tail


def _send_snapshot(cfg: RemoteConfig, home: Path, submit: SubmitConfig) -> str:
    from nvq.world.forward import ForwardError, SnapshotError, send_snapshot

    command = remote_command(cfg, ["queue", RECEIVE_BLOBS], os.environ.get("NVQ_SUBMITTER"))
    try:
        return send_snapshot(Path.cwd(), home, submit, ssh_argv(cfg, command, stdin=True))
    except SnapshotError as exc:
        raise RemoteError(str(exc)) from None
    except ForwardError as exc:
        if exc.code == SSH_UNREACHABLE:
            print(f"nvq: cannot reach the queue host {cfg.host} over ssh", file=sys.stderr)
        elif str(exc):
            print(f"nvq: {exc}", file=sys.stderr)
        raise ForwardedExit(exc.code) from None
