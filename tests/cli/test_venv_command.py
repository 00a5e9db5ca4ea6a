"""A command that starts with a path into a venv in the submit directory runs that
venv by its absolute path (the snapshot leaves venvs out): the rule, on real
directories, and a real job run through it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nvq.cli.venv_command import venv_command
from tests.cluster import Nvq


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A directory holding a venv-shaped `.venv` (pyvenv.cfg, bin/python) and code."""
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (tmp_path / ".venv" / "bin" / "python").symlink_to(sys.executable)
    (tmp_path / "tools").mkdir()
    return tmp_path


@pytest.mark.parametrize(
    ("command", "made"),
    [
        (".venv/bin/python train.py", "{p}/.venv/bin/python train.py"),
        ("./.venv/bin/python  -u train.py  # keep", "{p}/.venv/bin/python  -u train.py  # keep"),
        ("  .venv/bin/torchrun x.py", "{p}/.venv/bin/torchrun x.py"),
        ("'.venv/bin/python' train.py", "{p}/.venv/bin/python train.py"),
        (".venv/bin/python", "{p}/.venv/bin/python"),
        (".venv/bin/python train.py && echo done", "{p}/.venv/bin/python train.py && echo done"),
    ],
)
def test_a_path_into_a_venv_here_becomes_absolute(project: Path, command: str, made: str) -> None:
    assert venv_command(command, str(project)) == made.format(p=project)


@pytest.mark.parametrize(
    "command",
    [
        "python train.py",  # from PATH: an activated venv is the shell's business
        "tools/run.sh",  # in the snapshot
        "../.venv/bin/python x.py",  # outside the submit directory
        "/usr/bin/python3 x.py",
        "~/.venv/bin/python x.py",
        "X=.venv/bin/python run",
        "echo .venv/bin/python",  # not the first word
        "'.venv/bin/python",  # unbalanced: left for the shell to refuse
        "",
    ],
)
def test_anything_else_is_left_as_typed(project: Path, command: str) -> None:
    assert venv_command(command, str(project)) == command


def test_a_job_runs_the_projects_venv_by_its_relative_path(nvq: Nvq) -> None:
    assert nvq.cwd is not None
    venv = nvq.cwd / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (nvq.cwd / "show.py").write_text("import sys; print('prefix', sys.prefix)\n")
    job = nvq.submit("--gpus", "0", "--", ".venv/bin/python", "show.py")
    code, (done,) = nvq.wait(job["id"])
    assert code == 0, done
    assert nvq.ok("job", "logs", str(job["id"])).out == f"prefix {venv}\n"
    assert nvq.show(job["id"])["command"] == f"{venv}/bin/python show.py"
