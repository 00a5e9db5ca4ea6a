"""Running an argv through the typer app: every command that nvq.cli.fast does not
answer itself, and all help."""

from __future__ import annotations

import typer
from click import exceptions as click_exc

from nvq.cli.app import GROUPS
from nvq.cli.commands import command_info, full_app
from nvq.cli.failure import fail, guarded
from nvq.cli.sweeps import resolve_members


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
    return guarded(lambda: _run(args, as_json), as_json)


def _run(args: list[str], as_json: bool) -> int:
    try:
        args = resolve_members(args)  # `7[3]`: member 3 of array 7, wherever an id goes
        result = _app_for(args)(args=args, prog_name="nvq", standalone_mode=False)
    except click_exc.NoArgsIsHelpError as exc:
        print(exc.ctx.get_help() if exc.ctx else str(exc))
        return 0 if not args else 2
    except click_exc.ClickException as exc:
        message = exc.format_message().strip().splitlines()
        fail(message[0] if message else type(exc).__name__, 2, as_json)
    except typer.Exit as exc:
        return int(exc.exit_code)
    except typer.Abort:
        return 130
    return result if isinstance(result, int) else 0
