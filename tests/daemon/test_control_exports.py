"""`nvq.control`'s face: every request, reply and frame its modules define is `c.Name`,
and no two of them define one name (a later `*` would hide the earlier silently)."""

from __future__ import annotations

import importlib
import pkgutil

import nvq.control as c

# The plain wire's own module (JSON frames for the typer-free reads), imported by name.
NOT_EXPORTED = {"plain"}


def test_each_name_a_control_module_defines_is_exported_once() -> None:
    owners: dict[str, list[str]] = {}
    for info in pkgutil.iter_modules(c.__path__):
        if info.name in NOT_EXPORTED:
            continue
        module = importlib.import_module(f"nvq.control.{info.name}")
        public = getattr(module, "__all__", None)
        for name, value in vars(module).items():
            if name.startswith("_") or getattr(value, "__module__", None) != module.__name__:
                continue
            if public is not None and name not in public:
                continue
            owners.setdefault(name, []).append(info.name)
            assert getattr(c, name) is value, f"c.{name} is not {module.__name__}.{name}"
    assert {n: ms for n, ms in owners.items() if len(ms) > 1} == {}
    assert {"Submit", "Done", "Coded", "JobDetail", "Shell", "ImagePush"} <= set(owners)
