"""The table that lets a CLI call import only its own command's module names every
command of the narrowed groups, each where it is declared (a wrong row would run
another command; a missing one would drop it from the app), and the CLI's modules
line up with the daemon's handler modules: one verb family, one name on both sides."""

from __future__ import annotations

import importlib
import pkgutil

import nvq.cli.commands
import nvq.daemon.handlers
from nvq.cli.app import GROUPS
from nvq.cli.commands import WHERE, command_info, full_app
from nvq.daemon.handlers import HANDLERS

# Served without a request handler of their own: the terminal sessions (streams in
# nvq.daemon.sessions.sessions), what runs here (project test, keeper, skill, completion, the
# servers, schema).
CLI_ONLY = {
    "shell", "reach", "project", "keeper", "skill", "completion", "web", "mcp", "schema",
}
# Requests no `nvq` command sends: the event stream and card history (TUI, web
# page), submit's dry run's helper, and the submit a job's own `nvq` sends
# (nvq_runner/job_cli.py).
HANDLERS_ONLY = {
    "subscribe",
    "history",
    "submit_preview",
    "submit_from_job",
    "context",  # what every handler works with, not a verb family
    "registry",  # where each handler registers, not a verb family
    "visibility",  # what a caller may see of a job, shared by the read handlers
    "stream_lines",  # `subscribe`'s filters and detailed lines (queue events --follow)
}


def _modules(package: object) -> set[str]:
    return {m.name for m in pkgutil.iter_modules(package.__path__)}  # type: ignore[attr-defined]


def test_the_table_names_every_command_of_the_narrowed_groups_where_it_is_declared() -> None:
    full_app()
    assert set(WHERE) == set(GROUPS)
    declared: dict[str, set[str]] = {group: set() for group in GROUPS}
    for module in _modules(nvq.cli.commands):
        part = importlib.import_module(f"nvq.cli.commands.{module}")
        for group in GROUPS:
            typer_app = getattr(part, f"on_{group}", None)
            if typer_app is not None:
                declared[group] |= {c.name for c in typer_app.registered_commands}
    for group, app in GROUPS.items():
        names = [c.name for c in app.registered_commands]
        assert names == list(WHERE[group]), group
        assert set(names) == declared[group], group
        for name, module in WHERE[group].items():
            part = importlib.import_module(f"nvq.cli.commands.{module}")
            assert name in [c.name for c in getattr(part, f"on_{group}").registered_commands]
            info = command_info(group, name)
            assert info is not None and info.name == name


def test_an_unknown_command_goes_to_the_whole_app() -> None:
    assert command_info("job", "nope") is None
    assert command_info("nope", "ls") is None


def test_cli_modules_and_handler_modules_are_the_same_families() -> None:
    cli = _modules(nvq.cli.commands)
    handlers = _modules(nvq.daemon.handlers)
    assert cli - CLI_ONLY == handlers - HANDLERS_ONLY
    assert cli >= CLI_ONLY
    assert handlers >= HANDLERS_ONLY
    # every handler in the table lives in one of them
    homes = {h.__module__.rsplit(".", 1)[-1] for h in HANDLERS.values()}
    assert homes <= handlers - {"subscribe"}
