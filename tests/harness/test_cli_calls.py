"""The harness's CLI calls (forked from a zygote that imported the CLI once) give what a
fresh `python -m nvq` gives: the same exit code, stdout and stderr, from the call's own
argv, environment, working directory and stdin."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.harness.cli_calls import run_nvq


def _fresh(argv: list[str], env: dict[str, str], cwd: Path, input: str | None) -> tuple[int, str, str]:
    done = subprocess.run([sys.executable, "-m", "nvq", *argv], env=env, cwd=cwd, input=input,
                          capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout, done.stderr


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    # a home whose socket path is too long: every call that would reach a daemon stops
    # with one line naming it (the environment is the call's), and none is started
    home = tmp_path / ("h" * 120) / "nvq"
    return {**{k: v for k, v in os.environ.items() if not k.startswith("NVQ_")},
            "NVQ_HOME": str(home)}


CALLS = [
    (["--help"], None),  # typer's help, on stdout
    (["job", "frobnicate"], None),  # a usage error: one line, exit 2
    (["job", "ls", "--json"], None),  # the fast path; the home comes from the environment
    (["queue", "nodes"], None),  # typer's path to the same error
    (["job", "submit", "--manifest", "-"], '[job]\nname = "x"\nbanana = 1\n'),  # stdin
    (["job", "submit", "--manifest", "here.toml"], None),  # a file in the working directory
]


@pytest.mark.parametrize(("argv", "input"), CALLS, ids=[" ".join(c[0]) for c in CALLS])
def test_a_forked_call_gives_what_a_fresh_process_gives(
    argv: list[str], input: str | None, env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "here.toml").write_text('[job]\ngpus = "many"\n')
    forked = run_nvq(argv, env=env, cwd=tmp_path, input=input)
    assert forked == _fresh(argv, env, tmp_path, input)
    _, out, err = forked
    assert (out + err).strip(), forked  # each says something


def test_calls_at_once_each_get_their_own_streams(env: dict[str, str], tmp_path: Path) -> None:
    words = [f"verb{i}" for i in range(8)]
    with ThreadPoolExecutor(len(words)) as pool:
        results = list(pool.map(lambda w: run_nvq(["job", w], env=env, cwd=tmp_path), words))
    for word, (code, out, err) in zip(words, results, strict=True):
        assert code == 2 and out == "" and word in err and err.count("\n") == 1, err
