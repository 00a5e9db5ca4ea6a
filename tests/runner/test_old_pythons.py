"""The runner runs on the node's CPython, 3.9 and later: every module of nvq_runner
compiles and imports there, and every Struct and dataclass in it resolves its
annotations (msgspec evaluates them: `int | None` fails on 3.9). The dependencies are
the very wheels bootstrap would ship to such a node."""

from __future__ import annotations

import platform
import subprocess
import zipfile
from pathlib import Path

import pytest

import nvq_runner
from nvq.daemon.ssh.wheels import Target, WheelError, dependency_wheels
from tests.runner.old_pythons import old_python

ROOT = Path(nvq_runner.__file__).parent.parent

_COMPILE = "import sys\nfor f in sys.argv[1:]:\n    compile(open(f).read(), f, 'exec')\n"

_CHECK = r"""
import dataclasses, importlib, inspect, pkgutil, sys
import msgspec
import nvq_runner
checked = 0
for m in pkgutil.walk_packages(nvq_runner.__path__, "nvq_runner."):
    mod = importlib.import_module(m.name)
    for obj in vars(mod).values():
        if not inspect.isclass(obj) or obj.__module__ != mod.__name__:
            continue
        if issubclass(obj, msgspec.Struct) or dataclasses.is_dataclass(obj):
            msgspec.inspect.type_info(obj)
            checked += 1
# the fake backend (TOML via tomli there) describes and samples its cards
with open("gpus.toml", "w") as f:
    f.write('cuda = "13.0"\n[[gpu]]\nname = "Fake L4"\nmemory = "24GiB"\n')
from nvq_runner.gpu.fake import FakeBackend
backend = FakeBackend("gpus.toml")
assert len(backend.facts().gpus) == 1 and len(backend.sample()) == 1
print("checked", checked)
"""


@pytest.mark.parametrize("version", [(3, 9), (3, 10)], ids=["3.9", "3.10"])
def test_runner_imports_on_older_python(
    version: tuple[int, int], tmp_path_factory: pytest.TempPathFactory
) -> None:
    python = old_python(version)
    if python is None:
        pytest.skip(f"no CPython {version[0]}.{version[1]} here (pyenv's ~/.pyenv/versions)")
    sources = [str(p) for p in sorted((ROOT / "nvq_runner").rglob("*.py"))]
    compiled = subprocess.run(  # compile() writes no bytecode into the tree
        [str(python), "-c", _COMPILE, *sources], capture_output=True, text=True
    )
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    cache = tmp_path_factory.mktemp("old-python-wheels")
    try:
        wheels = dependency_wheels(Target(version, platform.machine(), "glibc", (2, 36)), cache)
    except WheelError as exc:
        pytest.skip(f"cannot fetch the runner's wheels for {python}: {exc}")
    site = cache / "site"
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as z:
            z.extractall(site)
    checked = subprocess.run(
        [str(python), "-c", _CHECK],
        capture_output=True, text=True, env={
            "PYTHONPATH": f"{ROOT}:{site}",
            "PATH": "/usr/bin:/bin",
            "PYTHONDONTWRITEBYTECODE": "1",
        },
        cwd=cache,
    )
    assert checked.returncode == 0, checked.stderr
    assert int(checked.stdout.split()[-1]) > 40
