"""A job's script gets `exec` only where that runs what the command alone would: one
plain command whose program is found (nvq_runner.script_exec). Run through the real
wrapper, the program replaces the script's bash and the wrapper records the same exit
status, also for a signal."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

from nvq_runner.jobfiles import JobDir
from nvq_runner.script_exec import Who, direct_argv, exec_form, may_execute
from nvq_runner.spawn import WRAPPER

ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin"}


@pytest.mark.parametrize(
    "command",
    ["bash -c 'echo hi; exit 3'", "sleep 1", "python3 -c 'print(1)' --x=y", "/bin/true",
     shlex.join(["sh", "-c", "echo \"$HOME\" it's"])],
)
def test_one_plain_command_is_execed(command: str) -> None:
    assert exec_form(command + "\n", ENV, Path("/")) == f"exec {command}\n"


@pytest.mark.parametrize(
    "command",
    [
        "",
        "echo hi",  # a builtin: exec would run /usr/bin/echo
        "printf '%s' x",
        "cd /tmp",
        "time sleep 1",  # a keyword
        "FOO=1 env",  # an assignment
        "sleep 1; sleep 2",
        "sleep 1 && true",
        "ls > out",
        "ls $HOME",
        "ls ~/x",
        "ls *.py",
        "sleep 1\nsleep 2",
        "nosuchprogram --x",  # not found: bash says so in its own words
        "./run.sh",  # not there
        "bash -c 'unterminated",
    ],
)
def test_anything_else_is_left_to_bash(command: str) -> None:
    assert exec_form(command + "\n", ENV, Path("/")) == command + "\n"


def test_an_exported_function_or_an_odd_path_keeps_bash(tmp_path: Path) -> None:
    assert exec_form("sleep 1\n", {**ENV, "BASH_FUNC_sleep%%": "() { :; }"}, tmp_path) \
        == "sleep 1\n"
    assert exec_form("sleep 1\n", {"PATH": ":/usr/bin"}, tmp_path) == "sleep 1\n"
    tool = tmp_path / "run.sh"
    tool.write_text("#!/bin/sh\nexit 4\n")
    assert exec_form("./run.sh\n", ENV, tmp_path) == "./run.sh\n"  # not executable
    tool.chmod(0o700)
    assert exec_form("./run.sh a\n", ENV, tmp_path) == "exec ./run.sh a\n"


def test_the_wrapper_records_the_programs_status(tmp_path: Path) -> None:
    d = JobDir(tmp_path / "jobs", 7)
    d.path.mkdir(parents=True)
    for command, code in ((shlex.join(["bash", "-c", "exit 3"]), 3),
                          (shlex.join(["bash", "-c", "kill -TERM $$"]), 128 + 15),
                          (shlex.join(["bash", "-c", "cat /proc/$PPID/comm"]), 0)):
        d.exit.unlink(missing_ok=True)
        script = exec_form(command + "\n", {"PATH": os.environ["PATH"]}, tmp_path)
        assert script.startswith("exec ")
        d.script.write_text(script)
        out = subprocess.run(["/bin/sh", str(WRAPPER), str(d.path), "0022"],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == code, command
        assert d.exit.read_text().strip() == str(code)
    # the program's parent is the wrapper itself: no bash in between
    assert out.stdout.strip() == "sh"


def test_the_wrapper_runs_a_programs_words_itself(tmp_path: Path) -> None:
    d = JobDir(tmp_path / "jobs", 8)
    d.path.mkdir(parents=True)
    env = {"PATH": os.environ["PATH"]}
    for command, code in ((shlex.join(["bash", "-c", "exit 3"]), 3),
                          (shlex.join(["bash", "-c", "kill -TERM $$"]), 128 + 15),
                          (shlex.join(["bash", "-c", "cat /proc/$PPID/comm"]), 0)):
        d.exit.unlink(missing_ok=True)
        words = direct_argv(exec_form(command + "\n", env, tmp_path), env, tmp_path)
        assert words == shlex.split(command)
        d.script.write_text("exit 99\n")  # not run: the words are
        out = subprocess.run(["/bin/sh", str(WRAPPER), str(d.path), "0022", *words],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == code, command
        assert d.exit.read_text().strip() == str(code)
    assert out.stdout.strip() == "sh"


def test_only_a_binary_or_a_hashbang_file_skips_bash(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"]}
    assert direct_argv("exec /bin/true a\n", env, tmp_path) == ["/bin/true", "a"]
    assert direct_argv("true\n", env, tmp_path) is None  # a builtin: bash's own
    tool = tmp_path / "run.sh"
    tool.write_text("#!/bin/sh\nexit 4\n")
    tool.chmod(0o700)
    assert direct_argv(exec_form("./run.sh x\n", env, tmp_path), env, tmp_path) == ["./run.sh", "x"]
    # No `#!`: bash runs such a file as a bash script, the wrapper's sh would not.
    tool.write_text("[[ 1 == 1 ]] && exit 5\n")
    script = exec_form("./run.sh\n", env, tmp_path)
    assert script == "exec ./run.sh\n"
    assert direct_argv(script, env, tmp_path) is None
    d = JobDir(tmp_path / "jobs", 9)
    d.path.mkdir(parents=True)
    d.script.write_text(script)
    out = subprocess.run(["/bin/sh", str(WRAPPER), str(d.path), "0022"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 5, out.stderr


def test_another_users_program_is_judged_with_their_uid_and_groups(tmp_path: Path) -> None:
    # The runner is root, for whom any execute bit will do; the member is not.
    member = Who(uid=5001, gids=frozenset({5001, 7000}))
    assert may_execute(0o700, 5001, 0, member)
    assert not may_execute(0o700, 0, 0, member)  # root's own: no
    assert may_execute(0o710, 0, 7000, member)  # through a group they are in
    assert not may_execute(0o601, 5001, 0, member)  # the owner's bits decide, even no
    assert not may_execute(0o601, 0, 7000, member)  # the group's bits decide, even no
    assert may_execute(0o701, 0, 0, member)
    tool = tmp_path / "run.sh"
    tool.write_text("#!/bin/sh\nexit 4\n")
    tool.chmod(0o700)  # root's, as tmp_path is
    env = {"PATH": os.environ["PATH"]}
    assert exec_form("./run.sh\n", env, tmp_path, member) == "./run.sh\n"  # bash says why
    assert exec_form("./run.sh\n", env, tmp_path) == "exec ./run.sh\n"
    assert exec_form("sleep 1\n", env, tmp_path, member) == "exec sleep 1\n"
    assert direct_argv("exec sleep 1\n", env, tmp_path, member) == ["sleep", "1"]
