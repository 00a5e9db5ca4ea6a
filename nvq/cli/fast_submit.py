"""`nvq job submit` without typer, for the argv shapes a script types: options from the
table below, then `-- CMD ...` or one quoted string as the last word.

Importing typer and click and building the command costs a submit more than all the
rest of it; a submit is on the path from a user's call to the job's first
instruction. This module only parses: what the values mean, and every check, is
nvq.cli.submit_flow, the same function typer's command calls. Anything else (an
option not in the table, a repeated one, `--opt` without its value, a value that
looks like an option, a word before `--`, `7[3]`, `--help`) returns None, and typer
parses the argv and prints what it always printed. NVQ_CLI_TYPER=1 turns this path
off (tests/cli/test_fast_submit.py uses it to run both and compare)."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from nvq.cli.submit_flow import SubmitArgs


def _table() -> dict[str, tuple[str, str | bool]]:
    """option → (SubmitArgs field, kind): "str" takes the next word (or `=value`), "int"
    a plain decimal number, "list" is repeatable; a bool sets the field to itself. Made
    from nvq.domain.submit_options, leaving out the options only typer takes."""
    from nvq.domain.submit_options import SUBMIT_OPTIONS

    table: dict[str, tuple[str, str | bool]] = {}
    for o in SUBMIT_OPTIONS:
        if not o.fast:
            continue
        if o.kind == "switch":
            on, off = o.flags[0].split("/")
            table[on], table[off] = (o.param, True), (o.param, False)
            continue
        kind: str | bool = True if o.kind == "flag" else {"text": "str"}.get(o.kind, o.kind)
        table.update((flag, (o.param, kind)) for flag in o.flags)
    return table


OPTIONS = _table()


def _int(text: str) -> int | None:
    # ASCII digits and one leading minus only: click's int() takes more ("+7", " 7",
    # "7_0") and words its own refusal; those go to typer.
    digits = text[1:] if text.startswith("-") else text
    return int(text) if digits.isascii() and digits.isdigit() else None


def parse(args: list[str]) -> SubmitArgs | None:
    """`args` after `job submit` as SubmitArgs, or None: typer's to parse."""
    if os.environ.get("NVQ_CLI_TYPER"):
        return None
    values: dict[str, object] = {}
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            command = args[i + 1:]
            break
        if not word.startswith("-"):
            # one quoted string, the last word (click would take every word after
            # the first as the command's: typer says what that means)
            if i != len(args) - 1:
                return None
            if "[" in word:  # see below
                return None
            command = [word]
            break
        option, eq, inline = word.partition("=")
        entry = OPTIONS.get(option)
        if entry is None or (eq and not option.startswith("--")):
            return None
        field, kind = entry
        if isinstance(kind, bool):
            if eq or (field in values and values[field] != kind):
                return None
            values[field] = kind
            i += 1
            continue
        if eq:
            value = inline
            i += 1
        else:
            if i + 1 >= len(args):
                return None
            value = args[i + 1]
            i += 2
        if value.startswith("-") and kind != "int":
            return None
        if "[" in value:  # an array member (`7[3]`), which typer's path resolves
            return None
        if kind == "list":
            existing = values.setdefault(field, [])
            assert isinstance(existing, list)
            existing.append(value)
            continue
        if field in values:
            return None
        if kind == "int":
            number = _int(value)
            if number is None:
                return None
            values[field] = number
        else:
            values[field] = value
    else:
        return None  # no command: typer names what is missing
    if not command:
        return None
    from nvq.cli.submit_flow import SubmitArgs

    return SubmitArgs(command=command, **values)


def run(args: list[str], as_json: bool) -> int | None:
    """The exit status of `nvq job submit ARGS`, or None when typer must parse them."""
    parsed = parse(args)
    if parsed is None:
        return None
    from nvq.cli.failure import guarded
    from nvq.cli.submit_flow import submit

    return guarded(lambda: submit(parsed), as_json)
