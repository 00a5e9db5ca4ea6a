"""The typer apps of `nvq` (the root and one per command group) and the options every
command shares. nvq.cli.commands attaches the commands to these apps; this module
imports none of them."""

from __future__ import annotations

import typer

from nvq.cli.grouped_help import GroupedHelp

app = typer.Typer(
    name="nvq",
    cls=GroupedHelp,
    help="A GPU job queue for your own machines.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # plain click help: rich is installed (for the TUI) but the CLI's output is fixed
    rich_markup_mode=None,
    suggest_commands=False,  # click suggests already: once is enough
)
job_app = typer.Typer(
    help="Submit, watch and manage jobs.", no_args_is_help=True, suggest_commands=False
)
# Bare `nvq queue` opens the terminal UI (the callback in nvq.cli.commands.queue).
queue_app = typer.Typer(
    help="The queue as a whole: status, nodes, events.",
    invoke_without_command=True,
    suggest_commands=False,
)
daemon_app = typer.Typer(
    help="Run the daemon in the foreground (or `stop` it).",
    invoke_without_command=True,
    suggest_commands=False,
)
node_app = typer.Typer(
    help="Nodes: their runner (status, restart, install, stop).",
    no_args_is_help=True,
    suggest_commands=False,
)
keeper_app = typer.Typer(
    help="Keep the daemon running (a supervisor or systemd).",
    no_args_is_help=True,
    suggest_commands=False,
)
project_app = typer.Typer(
    help="Try a job here before queueing it.", no_args_is_help=True, suggest_commands=False
)
image_app = typer.Typer(
    help="Container images on the nodes: stage one ahead of its jobs, list them.",
    no_args_is_help=True,
    suggest_commands=False,
)
cluster_app = typer.Typer(
    help="Slurm clusters: pilots, scaling.", no_args_is_help=True, suggest_commands=False
)
reserve_app = typer.Typer(
    help="Cards set aside for some users over a window of time.",
    no_args_is_help=True,
    suggest_commands=False,
)
# Bare `nvq skill` prints the skill (the callback in nvq.cli.commands.skill).
skill_app = typer.Typer(
    help="nvq's Agent Skill for coding agents (print or install it).",
    invoke_without_command=True,
    suggest_commands=False,
)

# `nvq --help` lists them by nvq.cli.grouped_help.SECTIONS.
app.add_typer(job_app, name="job")
app.add_typer(queue_app, name="queue")
app.add_typer(daemon_app, name="daemon")
app.add_typer(node_app, name="node")
app.add_typer(project_app, name="project")
app.add_typer(image_app, name="image")
app.add_typer(cluster_app, name="cluster")
app.add_typer(reserve_app, name="reserve")
app.add_typer(skill_app, name="skill")
queue_app.add_typer(keeper_app, name="keeper")

# The groups `nvq GROUP COMMAND` may be narrowed to (see nvq.cli.main).
GROUPS = {"job": job_app, "queue": queue_app, "node": node_app}

JsonOpt = typer.Option(False, "--json", help="Print one JSON document.")
