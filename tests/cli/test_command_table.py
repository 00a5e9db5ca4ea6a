"""The table that lets a CLI call import only its own command's module names every
command of the narrowed groups, each where it is declared (a wrong row would run
another command; a missing one only costs the fast path)."""

from __future__ import annotations

import importlib

from nvq.cli.app import GROUPS
from nvq.cli.commands import WHERE, command_info, full_app


def test_the_table_names_every_command_of_the_narrowed_groups_where_it_is_declared() -> None:
    full_app()
    assert set(WHERE) == set(GROUPS)
    for group, app in GROUPS.items():
        names = {c.name for c in app.registered_commands}
        assert set(WHERE[group]) == names, group
        for name, module in WHERE[group].items():
            part = importlib.import_module(f"nvq.cli.commands.{module}")
            declared = [c.name for c in getattr(part, f"on_{group}").registered_commands]
            assert name in declared, (group, name, module)
            info = command_info(group, name)
            assert info is not None and info.name == name


def test_an_unknown_command_goes_to_the_whole_app() -> None:
    assert command_info("job", "nope") is None
    assert command_info("nope", "ls") is None
