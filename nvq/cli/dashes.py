"""`nvq job submit ... -- CMD`: once `--` is given, everything before it must be an
option or an option's value. Click alone cannot tell: a stray word ends the options
and swallows the rest, so `--timeout 5 minutes -- echo hi` would run `minutes -- echo
hi`. The command keeps its raw arguments so the stray word can be named."""

from __future__ import annotations

import re

import click
from typer.core import TyperCommand

from nvq.cli.params import CliError
from nvq.values import format_duration, parse_duration

_RAW_ARGS = "nvq.raw_args"


class KeepsRawArgs(TyperCommand):
    """A command that remembers the arguments it was given, before click parses them."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[_RAW_ARGS] = list(args)
        return super().parse_args(ctx, args)


def check_before_dashes(ctx: click.Context, command: list[str] | None) -> None:
    """Refuse a word before `--` that no option took (the parsed `command` then starts
    with it: the words after `--` are its tail)."""
    raw: list[str] = ctx.meta.get(_RAW_ARGS, [])
    if "--" not in raw or not command:
        return
    after = len(raw) - raw.index("--") - 1
    stray = command[: len(command) - after]
    if not stray:
        return
    word = stray[0]
    at = raw.index(word)
    raise CliError(f"unexpected {word!r} before --{_hint(raw[:at], word)}", 2)


def _hint(before: list[str], word: str) -> str:
    """`; did you mean --timeout '5 minutes' or 5m?` when the stray word completes the
    value of the option just before it; else nothing."""
    if not before:
        return ""
    option, _, value = before[-1].partition("=") if before[-1].startswith("-") else ("", "", "")
    if not value:
        if len(before) < 2 or not before[-2].startswith("-"):
            return ""
        option, value = before[-2], before[-1]
    joined = f"{value} {word}"
    try:
        seconds = parse_duration(joined)
    except ValueError:
        return f"; did you mean {option} {_quote(joined)}?"
    return f"; did you mean {option} {_quote(joined)} or {_compact(seconds)}?"


def _quote(text: str) -> str:
    return f"'{text}'"


def _compact(seconds: float) -> str:
    """5m, not format_duration's 5m00s."""
    return re.sub(r"(?<=[a-z])00[a-z]$", "", format_duration(seconds))
