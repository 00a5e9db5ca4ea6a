"""`nvq skill [install]`: nvq's own Agent Skill, for coding agents that run GPU work
for a person (see nvq.agents.skill)."""

from __future__ import annotations

import sys

import typer

from nvq.cli.app import JsonOpt
from nvq.cli.params import CliError
from nvq.cli.render.output import emit

on_skill = typer.Typer()  # attached to the `skill` group in nvq.cli.commands


@on_skill.callback()
def skill_main(ctx: typer.Context, as_json: bool = JsonOpt) -> int:
    """Print nvq's Agent Skill (SKILL.md): when and how an agent should use the queue."""
    if ctx.invoked_subcommand is not None:
        return 0
    from nvq.agents.skill import text

    if as_json:
        from nvq.cli.json_shapes import SkillText

        emit(SkillText(text=text()), True)
    else:
        sys.stdout.write(text())
    return 0


@on_skill.command("install")
def skill_install(
    skills_dir: str = typer.Option(
        None,
        "--dir",
        help="Skills directory (default ~/.claude/skills; Codex: ~/.codex/skills; "
        "one project: .claude/skills). Writes DIR/nvq/SKILL.md.",
    ),
    as_json: bool = JsonOpt,
) -> int:
    """Install the skill where Agent Skills-compatible tools find it."""
    from nvq.agents.skill import install

    try:
        path, changed = install(skills_dir)
    except OSError as exc:
        raise CliError(f"cannot write the skill: {exc}") from None
    said = "installed" if changed else "already current"
    emit({"path": str(path), "changed": changed}, as_json, f"skill {said}: {path}")
    return 0
