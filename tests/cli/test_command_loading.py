"""A CLI call through typer imports the module of the command it runs, not the modules
(and their imports) of every other command; help still lists them all."""

from __future__ import annotations

import json
import subprocess
import sys

from nvq.cli.app import GROUPS
from nvq.cli.commands import command_info, full_app
from tests.cluster import Nvq

# `python -m nvq ARGS` that prints, as it exits, every module it loaded (importlib's
# imports too, which -X importtime does not list)
PROBE = (
    "import atexit, json, runpy, sys; "
    "atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.stderr)); "
    "sys.argv = ['nvq', *sys.argv[1:]]; runpy.run_module('nvq', run_name='__main__')"
)


def loaded(env: dict[str, str], *args: str) -> tuple[int, set[str]]:
    """(exit status, every module loaded) of `nvq ARGS`."""
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args], env=env, capture_output=True, text=True, timeout=60
    )
    return proc.returncode, set(json.loads(proc.stderr.splitlines()[-1]))


def test_every_narrowed_command_is_found_in_its_own_module() -> None:
    full_app()
    for group, app in GROUPS.items():
        assert app.registered_commands, group
        for info in app.registered_commands:
            assert info.name is not None
            assert command_info(group, info.name) is info, (group, info.name)
    assert command_info("job", "frobnicate") is None
    assert command_info("nosuchgroup", "ls") is None


def test_a_command_loads_only_its_own_module(nvq: Nvq) -> None:
    job = str(nvq.submit("--", "true")["id"])
    code, names = loaded(nvq.env, "job", "wait", job, "--json")
    assert code == 0
    assert "nvq.cli.commands.jobs" in names
    others = {n for n in names if n.startswith("nvq.cli.commands.")} - {"nvq.cli.commands.jobs"}
    assert not others, sorted(others)
    assert "nvq.world.snapshot" not in names and "pathspec" not in names
    # help walks the whole app: every group is there
    code, names = loaded(nvq.env, "--help")
    assert code == 0 and {"nvq.cli.commands.submit", "nvq.cli.commands.world"} <= names
    assert "submit" in nvq.ok("job", "--help").out
