"""`nvq schema [COMMAND]`: the JSON Schema of what a command prints with --json."""

from __future__ import annotations

import sys

import msgspec
import typer

from nvq.cli.app import JsonOpt
from nvq.cli.params import CliError

on_schema = typer.Typer()  # attached as the `schema` command in nvq.cli.commands


@on_schema.command("schema")
def schema(
    command: list[str] = typer.Argument(None, help="The command, e.g. `job show`."),
    as_json: bool = JsonOpt,
) -> int:
    """The JSON Schema of a command's --json document.

    Generated from the typed replies the daemon sends, so it is what --json prints;
    with no command, every command's, as one object. It is JSON either way: --json
    changes nothing but makes a refusal a JSON error document too."""
    from nvq.cli.json_shapes import NOT_DESCRIBED, SHAPES
    from nvq.cli.json_shapes import schema as schema_of

    name = " ".join(command or []).removeprefix("nvq ").strip()
    if not name:
        doc: object = {cmd: schema_of(cmd) for cmd in SHAPES}
    elif name in SHAPES:
        doc = schema_of(name)
    elif name in NOT_DESCRIBED:
        raise CliError(f"`nvq {name} --json` has no schema yet: {NOT_DESCRIBED[name]}")
    else:
        raise CliError(f"no command `nvq {name}` with --json (nvq schema lists them all)", 2)
    sys.stdout.write(msgspec.json.format(msgspec.json.encode(doc), indent=2).decode() + "\n")
    return 0
