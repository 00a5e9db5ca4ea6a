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

from nvq.errors import BadInput, UserError
from nvq.remote_gate import END_ON_EOF, LOCAL_FLAG, leading_options, mentions_remote
from nvq.remote_share import (
    MasterFailed,
    control_path,
    ensure_master,
    report,
    share_options,
)

TYPE_CHECKING = False  # not from typing: every CLI call imports this module

if TYPE_CHECKING:  # every CLI call imports this module; most never parse a config
    from typing import Any

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
TUI = ["queue"]  # bare `nvq queue`
# `job forward` listens on this machine and relays each connection through the
# queue host (`job forward --stdio` there, one ssh call per connection).
FORWARD_FLAG = "--over-remote"
# `web` runs here too: the page is served on the queue host and its port tunnelled to
# this machine (nvq.cli.web_remote).
WEB_FLAG = "--over-remote"
# Commands that take this machine's directory, environment and snapshot with them.
SUBMITS = (["job", "submit"], ["job", "shell"])


class RemoteError(BadInput):
    pass


def split_local(argv: list[str]) -> tuple[list[str], bool]:
    """Remove `--local` from before the command words: run this one command against
    the local queue. After them it is the command's own (`job forward --local` is not
    this), so it is left there."""
    lead = leading_options(argv)
    local = LOCAL_FLAG in argv[:lead]
    return [a for a in argv[:lead] if a != LOCAL_FLAG] + argv[lead:], local


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


def remote_command(
    cfg: RemoteConfig, argv: list[str], submitter: str | None, *, hangup: bool = False,
) -> str:
    """The shell command line the queue host runs (ssh sends one string). With
    `hangup`, the command ends when its stdin does (nvq.cli.hangup)."""
    env = []
    if cfg.home:
        env.append(f"NVQ_HOME={shlex.quote(cfg.home)}")
    if submitter:
        env.append(f"NVQ_SUBMITTER={shlex.quote(submitter)}")
    if hangup:
        env.append(f"{END_ON_EOF}=1")
    prefix = f"env {' '.join(env)} " if env else ""
    # cfg.nvq is taken as written (it may be "python3 -m nvq"); arguments are quoted.
    return f"exec {prefix}{cfg.nvq} {shlex.join(argv)}".rstrip()


def connect_options(cfg: RemoteConfig) -> list[str]:
    """The ssh options that decide the connection: the config's port, identity,
    known_hosts, user and jump; host keys checked strictly, nothing asked."""
    args = [
        "-o",
        "BatchMode=yes",
        "-o",
        "LogLevel=ERROR",  # ssh's own chatter would change stderr
        "-p",
        str(cfg.port),
    ]
    if cfg.identity:
        args += ["-i", cfg.identity, "-o", "IdentitiesOnly=yes"]
    if cfg.known_hosts:
        args += ["-o", f"UserKnownHostsFile={cfg.known_hosts}", "-o", "StrictHostKeyChecking=yes"]
    if cfg.user:
        args += ["-l", cfg.user]
    if cfg.jump:
        args += ["-o", f"ProxyCommand={jump_command(cfg)}"]
    return args


def ssh_argv(
    cfg: RemoteConfig, command: str, *, stdin: bool, tty: bool = False,
    control: str | None = None,
) -> list[str]:
    """`ssh` running `command` on the queue host; with `control`, as a session of the
    shared connection (nvq.remote_share)."""
    # no PTY: stdout and stderr stay apart, bytes pass unchanged (a terminal command is
    # the exception: it wants one)
    args = ["ssh", "-t" if tty else "-T",
            *(share_options(control) if control is not None else []), *connect_options(cfg)]
    if not stdin:
        args.append("-n")
    return [*args, cfg.host, command]


def connection(cfg: RemoteConfig, home: Path) -> str | None:
    """The shared connection's control socket, its master started when none answers;
    None where no private place for it exists (each call then connects on its own).
    When the queue host cannot be reached, says so and raises ForwardedExit."""
    path = control_path(cfg, str(home))
    if path is None:
        return None
    try:
        ensure_master(cfg, path, connect_options(cfg))
    except FileNotFoundError:
        raise RemoteError("[remote] needs the ssh client, and none is installed") from None
    except MasterFailed as exc:
        report(exc)
        if exc.code == SSH_UNREACHABLE:
            print(f"nvq: cannot reach the queue host {cfg.host} over ssh", file=sys.stderr)
        raise ForwardedExit(exc.code) from None
    return path


def shared_connection(cfg: RemoteConfig, home: Path) -> str | None:
    """`connection` for a command that runs here (`job pull`, `job forward`, `web`):
    an unreachable queue host ends it with ssh's status."""
    import typer

    from nvq.cli.params import CliError

    try:
        return connection(cfg, home)
    except ForwardedExit as exc:
        raise typer.Exit(exc.code) from None
    except RemoteError as exc:
        raise CliError(str(exc), 2) from None


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


def is_terminal(argv: list[str]) -> bool:
    """A command that is a terminal on the queue host's side (ssh gives it a pty)."""
    return argv[:2] in TERMINALS or argv == TUI


def wants_tty(argv: list[str]) -> bool:
    """A pty there when this end is a terminal: the TUI, as it does here, only when
    both its input and its output are (elsewhere it prints the group's help)."""
    if argv == TUI:
        return sys.stdin.isatty() and sys.stdout.isatty()
    return is_terminal(argv) and sys.stdin.isatty()


def forward(cfg: RemoteConfig, argv: list[str], control: str | None) -> int:
    """Run `nvq argv` on the queue host; returns its exit status."""
    import subprocess  # only a forwarded call pays for it

    argv, local_file = file_argument(argv)
    stdin_file = None
    if local_file is not None:
        try:
            stdin_file = open(local_file, "rb")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise RemoteError(f"{local_file}: {exc.strerror}") from None
    reads_stdin = stdin_file is not None or "-" in argv or is_terminal(argv)
    # A command that reads nothing gets a stdin that stays open while this process
    # lives: its end is this call's end, Ctrl-C or kill (nvq.cli.hangup).
    command = remote_command(cfg, argv, os.environ.get("NVQ_SUBMITTER"),
                             hangup=not reads_stdin)
    stdin: Any = stdin_file if stdin_file is not None else (
        None if reads_stdin else subprocess.PIPE)
    try:
        proc = subprocess.Popen(
            ssh_argv(cfg, command, stdin=True, tty=wants_tty(argv), control=control),
            stdin=stdin,
        )
    except FileNotFoundError:
        raise RemoteError("[remote] needs the ssh client, and none is installed") from None
    finally:
        if stdin_file is not None:
            stdin_file.close()
    try:
        code = proc.wait()
    except BaseException:
        hang_up(proc)
        raise
    if proc.stdin is not None:
        proc.stdin.close()
    if code == SSH_UNREACHABLE:
        print(f"nvq: cannot reach the queue host {cfg.host} over ssh", file=sys.stderr)
    return code


def hang_up(proc: Any) -> None:
    """This call is interrupted: end the ssh call, and with it the command there."""
    if proc.stdin is not None:
        proc.stdin.close()
    if proc.poll() is None:
        proc.terminate()


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
    if argv[:1] == ["web"]:
        # runs here: so does the URL it prints
        return [argv[0], WEB_FLAG, *argv[1:]], None
    try:
        control = connection(cfg, home)
        from nvq.remote_reads import read_here

        session = ssh_argv(cfg, "", stdin=False, control=control)[:-1]
        code = read_here(cfg, control, argv, session)
        if code is not None:  # answered here, through the queue host's daemon socket
            return argv, code
        return argv, forward(cfg, with_submit_world(argv, config.submit, cfg, home, control),
                             control)
    except ForwardedExit as exc:
        return argv, exc.code


class ForwardedExit(UserError):
    """The forward stopped before the command ran there; its reason is already out."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code
        self.exit_code = code


def with_submit_world(
    argv: list[str], submit: SubmitConfig, cfg: RemoteConfig, home: Path, control: str | None,
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
        extra.append(f"--from-snapshot={_send_snapshot(cfg, home, submit, control)}")
    if "--no-env" not in head:
        from nvq.cli.submit_world import encode_env
        from nvq.world.environment import capture

        extra.append(f"--from-env={encode_env(capture(os.environ, submit.env_exclude))}")
    return head[:2] + extra + head[2:] + sep + tail


def _send_snapshot(
    cfg: RemoteConfig, home: Path, submit: SubmitConfig, control: str | None,
) -> str:
    from nvq.world.forward import ForwardError, SnapshotError, send_snapshot

    command = remote_command(cfg, ["queue", RECEIVE_BLOBS], os.environ.get("NVQ_SUBMITTER"))
    try:
        return send_snapshot(Path.cwd(), home, submit,
                             ssh_argv(cfg, command, stdin=True, control=control))
    except SnapshotError as exc:
        raise RemoteError(str(exc)) from None
    except ForwardError as exc:
        if exc.code == SSH_UNREACHABLE:
            print(f"nvq: cannot reach the queue host {cfg.host} over ssh", file=sys.stderr)
        elif str(exc):
            print(f"nvq: {exc}", file=sys.stderr)
        raise ForwardedExit(exc.code) from None
