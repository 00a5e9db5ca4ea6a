"""`nvq --help` as a reader looks for things: the commands in groups (jobs, the queue,
nodes, admin) rather than in the order they were attached, then the options every
command takes, which no single command's help would otherwise show at the top."""

from __future__ import annotations

import click
from typer.core import TyperGroup

# Heading → the root's commands under it, in this order. A command not named here
# lands under the last heading, so a new one is listed somewhere until it is placed.
SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Jobs", ("job", "project", "image")),
    ("Queue", ("queue", "report", "web", "mcp")),
    ("Nodes", ("node", "cluster", "reserve")),
    ("Admin", ("daemon", "completion", "schema", "skill")),
)
HEADINGS = frozenset(title + ":" for title, _ in SECTIONS)

GLOBAL_OPTIONS = (
    ("--json", "Print one JSON document on stdout (an error too); any command."),
    ("--local", "With [remote] set: run this one command against this machine."),
    ("--version", "Print nvq's version."),
    ("NVQ_HOME", "The queue's home: config.toml, queue.db, daemon.sock (~/.nvq)."),
)


def sections(names: list[str]) -> list[tuple[str, list[str]]]:
    """The headings and the commands under each, every name in exactly one."""
    placed = {name for _, group in SECTIONS for name in group}
    out: list[tuple[str, list[str]]] = []
    for i, (title, group) in enumerate(SECTIONS):
        rest = [n for n in names if n not in placed] if i == len(SECTIONS) - 1 else []
        listed = [n for n in group if n in names] + rest
        if listed:
            out.append((title, listed))
    return out


class GroupedHelp(TyperGroup):
    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = [n for n in self.list_commands(ctx) if not self.commands[n].hidden]
        for title, group in sections(names):
            rows = [(n, self.commands[n].get_short_help_str(formatter.width - 16)) for n in group]
            with formatter.section(title):
                formatter.write_dl(rows)

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        click.Command.format_options(self, ctx, formatter)
        with formatter.section("Global options"):
            formatter.write_dl(list(GLOBAL_OPTIONS))
        self.format_commands(ctx, formatter)
