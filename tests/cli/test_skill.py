"""`nvq skill`: the skill's front matter, every command line it shows parses against
the real CLI (so the skill cannot drift from it), and `skill install` writes what
`nvq skill` prints."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import click
import pytest
import typer

from nvq.agents.skill import SOURCE, text
from nvq.cli.commands import full_app

COMMAND_LINE = re.compile(r"^\s*(nvq\s.*?)\s*(?:#.*)?$")
INLINE = re.compile(r"`(nvq\s[^`]*)`")


def front_matter(doc: str) -> dict[str, str]:
    head, sep, _ = doc.removeprefix("---\n").partition("\n---\n")
    assert doc.startswith("---\n") and sep, "SKILL.md starts with a --- front matter block"
    fields = {}
    for line in head.splitlines():
        key, colon, value = line.partition(": ")
        assert colon and re.fullmatch(r"[a-z-]+", key), f"not a `key: value` line: {line!r}"
        fields[key] = value
    return fields


def shown_commands(doc: str) -> list[str]:
    """Every `nvq ...` line of the skill's code blocks, and every inline `nvq ...`."""
    found: list[str] = []
    in_block = False
    for line in doc.splitlines():
        if line.startswith("```"):
            in_block = not in_block
            continue
        if in_block:
            m = COMMAND_LINE.match(line)
            if m:
                found.append(m.group(1))
        else:
            found += INLINE.findall(line)
    return found


def parse(argv: list[str]) -> click.Command:
    """The command `nvq ARGV` runs, its options and arguments parsed and converted as
    a call would (an unknown option or a bad value raises), without running it."""
    command: click.Command = typer.main.get_command(full_app())
    parent: click.Context | None = None
    name = "nvq"
    args = [a for a in argv if a != "--help"]
    while True:
        try:
            ctx = command.make_context(name, list(args), parent=parent)
        except click.exceptions.NoArgsIsHelpError:
            if argv[-1:] == ["--help"]:  # `nvq job --help`: the group's own help
                return command
            raise
        if not isinstance(command, click.Group):
            return command
        rest = [*getattr(ctx, "_protected_args", []), *ctx.args]
        if not rest:
            assert command.invoke_without_command or argv[-1:] == ["--help"], argv
            return command
        found, sub, args = command.resolve_command(ctx, rest)
        assert sub is not None and found is not None, argv
        command, parent, name = sub, ctx, found


def test_front_matter_names_the_skill_and_says_when_to_use_it() -> None:
    fields = front_matter(text())
    assert fields["name"] == "nvq"
    assert fields["description"].startswith("Run GPU work")
    assert "Use whenever" in fields["description"]
    assert len(fields["description"]) <= 1024  # the Agent Skills limit
    assert json.loads(fields["metadata"])["requires"]["bins"] == ["nvq"]


def test_every_command_line_the_skill_shows_parses() -> None:
    commands = shown_commands(text())
    assert len(commands) > 40, "the skill shows too few commands: did the pattern break?"
    bad = {}
    for line in commands:
        try:
            parse(shlex.split(line)[1:])
        except (click.ClickException, AssertionError) as exc:
            bad[line] = (str(exc) or type(exc).__name__).splitlines()[0]
    assert bad == {}


def test_a_wrong_command_line_is_caught() -> None:
    """The check above can fail: an option or a subcommand nvq lacks does not parse."""
    for wrong in ["job submit --frobnicate 1 -- true", "job frobnicate 12", "job show abc"]:
        with pytest.raises(click.ClickException):
            parse(shlex.split(wrong))


def test_install_writes_what_skill_prints(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "NVQ_HOME": str(tmp_path / "q")}

    def nvq(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "nvq", *args], env=env, capture_output=True, text=True
        )

    printed = nvq("skill")
    assert printed.returncode == 0 and printed.stdout == SOURCE.read_text()
    first = nvq("skill", "install", "--json")
    assert first.returncode == 0, first.stderr
    path = tmp_path / ".claude/skills/nvq/SKILL.md"
    assert json.loads(first.stdout) == {"path": str(path), "changed": True}
    assert path.read_text() == printed.stdout
    assert path.stat().st_mode & 0o777 == 0o600
    again = nvq("skill", "install", "--dir", str(tmp_path / "codex"))
    assert again.returncode == 0
    assert (tmp_path / "codex/nvq/SKILL.md").read_text() == printed.stdout
    assert nvq("skill", "install").stdout == f"skill already current: {path}\n"
