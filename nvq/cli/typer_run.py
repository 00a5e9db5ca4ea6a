"""Running an argv through the typer app: every command that nvq.cli.fast does not
answer itself, and all help."""

from __future__ import annotations

import errno

import typer
from click import exceptions as click_exc

from nvq.cli.app import GROUPS
from nvq.cli.commands import command_info, full_app
from nvq.cli.failure import fail
from nvq.cli.sweeps import resolve_members
from nvq.client import ClientError


def _app_for(args: list[str]) -> typer.Typer:
    """An app holding only the command being run, when it is a plain `GROUP COMMAND`.

    typer turns every registered function's signature into click parameters each
    time the app runs (about 1 ms a command, and nvq has dozens), and the modules of
    the other commands have imports of their own; a CLI call runs one command, so it
    need not pay for the others. Help and anything unusual go to the full app."""
    if len(args) < 2 or args[0] not in GROUPS or args[1].startswith("-"):
        return full_app()
    info = command_info(args[0], args[1])
    if info is None:
        return full_app()
    narrow_group = typer.Typer(no_args_is_help=True)
    narrow_group.registered_commands = [info]
    narrow = typer.Typer(
        add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None
    )
    narrow.add_typer(narrow_group, name=args[0])
    return narrow


def run(args: list[str], as_json: bool) -> int:
    """The exit status of `nvq ARGS`; a failure prints its one line (or JSON document)."""
    try:
        args = resolve_members(args)  # `7[3]`: member 3 of array 7, wherever an id goes
        result = _app_for(args)(args=args, prog_name="nvq", standalone_mode=False)
    except ClientError as exc:
        fail(str(exc), exc.exit_code, as_json)
    except click_exc.NoArgsIsHelpError as exc:
        print(exc.ctx.get_help() if exc.ctx else str(exc))
        return 0 if not args else 2
    except click_exc.ClickException as exc:
        message = exc.format_message().strip().splitlines()
        fail(message[0] if message else type(exc).__name__, 2, as_json)
    except typer.Exit as exc:
        return int(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        return 130
    except BrokenPipeError:
        return 0
    except PermissionError as exc:
        # What this user may not touch on this machine (the queue's home, when a
        # member runs what is the queue owner's to run): one line, never a traceback.
        where = f"{exc.filename}: " if exc.filename else ""
        fail(f"{where}permission denied (it is not yours to change)", 1, as_json)
    except OSError as exc:
        # A full disk where this command writes (a snapshot, a pull): one line.
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        where = f" ({exc.filename})" if exc.filename else ""
        fail(f"no space left on the disk{where}: free some space and try again", 1, as_json)
    return result if isinstance(result, int) else 0
