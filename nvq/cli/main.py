"""The `nvq` command line. Every command takes `--json` and then prints exactly one JSON
document; errors are one line on stderr (or a JSON error document with `--json`) and a
non-zero exit."""

from __future__ import annotations

import os
import sys
from typing import NoReturn

import typer
from click import exceptions as click_exc

from nvq.cli.app import GROUPS
from nvq.cli.commands import app
from nvq.cli.render.output import emit
from nvq.cli.sweeps import resolve_members
from nvq.client import ClientError
from nvq.home import PRIVATE_UMASK, default_root


def _app_for(args: list[str]) -> typer.Typer:
    """An app holding only the command being run, when it is a plain `GROUP COMMAND`.

    typer turns every registered function's signature into click parameters each
    time the app runs (about 1 ms a command, and nvq has dozens); a CLI call runs
    one command, so it need not pay for the others. Help and anything unusual go to
    the full app."""
    if len(args) < 2 or args[0] not in GROUPS or args[1].startswith("-"):
        return app
    group = GROUPS[args[0]]
    match = [c for c in group.registered_commands if c.name == args[1]]
    if len(match) != 1:
        return app
    narrow_group = typer.Typer(no_args_is_help=True)
    narrow_group.registered_commands = match
    narrow = typer.Typer(
        add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None
    )
    narrow.add_typer(narrow_group, name=args[0])
    return narrow


def _wants_json(argv: list[str]) -> bool:
    head = argv[: argv.index("--")] if "--" in argv else argv
    return "--json" in head


def fail(message: str, code: int, as_json: bool) -> NoReturn:
    if as_json:
        emit({"error": message, "exit_code": code}, True)
    else:
        print(f"nvq: {message}", file=sys.stderr)
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    # Whatever this process writes (a daemon it starts, backups, snapshots) is private.
    os.umask(PRIVATE_UMASK)
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = _wants_json(args)
    from nvq.config import ConfigError
    from nvq.remote import RemoteError, maybe_forward

    try:
        # [remote]: the whole argv runs on the queue host; --local opts out once.
        args, forwarded = maybe_forward(args, default_root())
    except (ConfigError, RemoteError) as exc:
        fail(str(exc), 2, as_json)
    except KeyboardInterrupt:
        sys.exit(130)
    if forwarded is not None:
        sys.exit(forwarded)
    try:
        args = resolve_members(args)  # `7[3]`: member 3 of array 7, wherever an id goes
        result = _app_for(args)(args=args, prog_name="nvq", standalone_mode=False)
    except ClientError as exc:
        fail(str(exc), exc.exit_code, as_json)
    except click_exc.NoArgsIsHelpError as exc:
        print(exc.ctx.get_help() if exc.ctx else str(exc))
        sys.exit(0 if not args else 2)
    except click_exc.ClickException as exc:
        message = exc.format_message().strip().splitlines()
        fail(message[0] if message else type(exc).__name__, 2, as_json)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    sys.exit(result if isinstance(result, int) else 0)


if __name__ == "__main__":
    main()
