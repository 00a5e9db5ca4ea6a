"""The `nvq` command line. Every command takes `--json` and then prints exactly one JSON
document; errors are one line on stderr (or a JSON error document with `--json`) and a
non-zero exit.

This module is the entry point and stays light: a CLI call should cost little more than
the interpreter's start. It imports nothing of typer or click itself; the commonest read
commands (nvq.cli.fast) answer without them, and everything else goes to the typer app
(nvq.cli.typer_run). `job submit` has its own (nvq.cli.fast_submit)."""

from __future__ import annotations

import os
import sys

from nvq.cli.failure import fail


def wants_json(argv: list[str]) -> bool:
    head = argv[: argv.index("--")] if "--" in argv else argv
    return "--json" in head


def without_no_tick(args: list[str]) -> list[str]:
    """`--no-tick` (the reference skill's "a pure database read") is taken by every read
    command (nvq.cli.fast.READS) and changes nothing: a read is always current, since
    the daemon learns of every change as it happens."""
    if "--no-tick" not in args:
        return args
    from nvq.cli.fast import READS

    if tuple(args[:2]) not in READS:
        return args
    end = args.index("--") if "--" in args else len(args)
    return [a for a in args[:end] if a != "--no-tick"] + args[end:]


def main(argv: list[str] | None = None) -> None:
    from nvq.home_root import PRIVATE_UMASK, root_text

    # Whatever this process writes (a daemon it starts, backups, snapshots) is private.
    os.umask(PRIVATE_UMASK)
    from nvq.remote_gate import END_ON_EOF, may_forward

    if END_ON_EOF in os.environ:  # a [remote] laptop's call: its end is ours
        from nvq.cli.hangup import watch_stdin

        watch_stdin()
    if "_NVQ_COMPLETE" in os.environ:  # the shell asks for completions (`nvq completion`)
        from nvq.cli.commands.completion import complete

        sys.exit(complete())
    args = without_no_tick(list(sys.argv[1:] if argv is None else argv))
    if args in (["--version"], ["-V"]):
        from nvq import __version__

        print(f"nvq {__version__}")
        sys.exit(0)
    as_json = wants_json(args)
    # [remote]: the whole argv runs on the queue host; --local opts out once.
    # Inside a job its own queue answers, relayed by the runner: never forwarded.
    if not os.environ.get("NVQ_SOCKET") and may_forward(args, root_text()):
        args = forwarded_or_local(args, as_json)
    if args[:2] == ["job", "submit"]:
        from nvq.cli.fast_submit import run as fast_submit

        code = fast_submit(args[2:], as_json)
        if code is not None:
            sys.exit(code)
    from nvq.cli.fast import fast_command

    command = fast_command(args)
    if command is not None:
        sys.exit(command.run(as_json))
    from nvq.cli.typer_run import run

    sys.exit(run(args, as_json))


def forwarded_or_local(args: list[str], as_json: bool) -> list[str]:
    """The argv to run here (without `--local`); exits with the remote command's
    status when it ran on the queue host."""
    from nvq.home import default_root
    from nvq.remote import RemoteError, maybe_forward

    try:
        args, forwarded = maybe_forward(args, default_root())
    except RemoteError as exc:
        fail(str(exc), 2, as_json)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:
        from nvq.config import ConfigError  # only a config with [remote] was parsed

        if not isinstance(exc, ConfigError):
            raise
        fail(str(exc), 2, as_json)
    if forwarded is not None:
        sys.exit(forwarded)
    return args


if __name__ == "__main__":
    main()
