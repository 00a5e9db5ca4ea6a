"""Golden files of the CLI's surface: every command's help text, the shapes of the
`--json` documents and a few error lines. They pin what users and scripts see, so a
restructuring of the CLI or the daemon proves it changed none of it.

After an intended change of that surface, regenerate the files and review the diff:
    NVQ_GOLDEN_UPDATE=1 .venv/bin/python -m pytest -p no:cacheprovider tests/cli/test_golden.py
"""

from __future__ import annotations

import io
import json
import os
import re
import runpy
import subprocess
import sys
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from nvq.cli.grouped_help import HEADINGS
from tests.cluster import Nvq, Run

GOLDEN = Path(__file__).parent / "golden"
HELP_DIR = GOLDEN / "help"
JSON_DIR = GOLDEN / "json"
UPDATE = os.environ.get("NVQ_GOLDEN_UPDATE") == "1"
COLUMNS = "100"


def check_text(path: Path, actual: str) -> None:
    """Compare `actual` with the golden file, or (when updating) write it."""
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual)
        return
    assert path.exists(), f"no golden file {path}; regenerate with NVQ_GOLDEN_UPDATE=1"
    assert actual == path.read_text(), f"{path.name} differs from its golden file"


def check_all(files: dict[Path, str]) -> None:
    """check_text for each file, naming every one that changed before failing on the
    first, so one run shows all that a change touched."""
    changed = []
    for path, actual in files.items():
        try:
            check_text(path, actual)
        except AssertionError:
            changed.append(path)
    if changed:
        first = changed[0]
        golden = first.read_text() if first.exists() else ""
        names = ", ".join(p.name for p in changed)
        assert files[first] == golden, f"golden files differ (regenerate?): {names}"


# --- help ----------------------------------------------------------------------------


def help_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NVQ_")}
    env.update(NVQ_HOME=str(home), COLUMNS=COLUMNS, PYTHONDONTWRITEBYTECODE="1")
    return env


def run_in_process(args: list[str], env: dict[str, str]) -> Run:
    """`python -m nvq ARGS` in this process: the same entry point, without paying for
    a Python start per command (the help walk makes dozens of calls)."""
    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_argv = dict(os.environ), sys.argv
    os.environ.clear()
    os.environ.update(env)
    sys.argv = ["nvq", *args]
    code: int = 0
    try:
        with redirect_stdout(out), redirect_stderr(err):
            runpy.run_module("nvq", run_name="__main__", alter_sys=False)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        sys.argv = saved_argv
    return Run(code, out.getvalue(), err.getvalue())


def run_subprocess(args: list[str], env: dict[str, str]) -> Run:
    proc = subprocess.run(
        [sys.executable, "-m", "nvq", *args], env=env, capture_output=True, text=True, timeout=60
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


def listed_commands(help_text: str) -> list[str]:
    """The names under a group help's "Commands:" heading (the root's: under its
    sections' headings)."""
    names: list[str] = []
    in_commands = False
    for line in help_text.splitlines():
        if line == "Commands:" or line in HEADINGS:
            in_commands = True
        elif in_commands and re.match(r"^  \S", line):
            names.append(line.split()[0])
        elif in_commands and line and not line.startswith(" "):
            in_commands = False
    return names


def help_calls(env: dict[str, str]) -> dict[str, Run]:
    """Every command's and group's `--help`, and every bare group, keyed by argv."""
    calls: dict[str, Run] = {}

    def walk(path: list[str]) -> None:
        run = run_in_process([*path, "--help"], env)
        calls[" ".join(["nvq", *path, "--help"])] = run
        subcommands = listed_commands(run.out)
        # A group whose command is optional (`nvq daemon`) runs something when bare.
        if subcommands and "[COMMAND]" not in run.out.splitlines()[0]:
            calls[" ".join(["nvq", *path])] = run_in_process(path, env)
        for name in subcommands:
            walk([*path, name])

    walk([])
    return calls


def help_file(argv: str) -> str:
    return argv.replace(" --help", " help").replace(" ", "_") + ".txt"


@pytest.fixture(scope="module")
def help_runs(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[dict[str, str], dict[str, Run]]]:
    env = help_env(tmp_path_factory.mktemp("help-home"))
    yield env, help_calls(env)


def test_every_command_has_golden_help(help_runs: tuple[dict[str, str], dict[str, Run]]) -> None:
    """The set of commands and the exit code of each help call: a command added or
    removed shows up here."""
    _, calls = help_runs
    index = {argv: run.code for argv, run in calls.items()}
    if UPDATE:
        for stale in HELP_DIR.glob("*.txt"):
            stale.unlink()
    check_text(HELP_DIR / "index.json", json.dumps(index, indent=2) + "\n")
    assert len(calls) > 40, "the help walk found too few commands"
    check_all({HELP_DIR / help_file(argv): run.out for argv, run in calls.items()})
    for argv, run in calls.items():
        assert run.err == "", f"{argv} wrote to stderr: {run.err!r}"


def test_help_in_process_matches_a_real_process(
    help_runs: tuple[dict[str, str], dict[str, Run]],
) -> None:
    """The in-process calls stand for `python -m nvq`: spot-check that they print the
    same as a real process (the top level, a group, a narrowed command, a bare group)."""
    env, calls = help_runs
    for argv in ["nvq --help", "nvq queue --help", "nvq job submit --help", "nvq job"]:
        real = run_subprocess(argv.split()[1:], env)
        assert (real.code, real.out, real.err) == (
            calls[argv].code,
            calls[argv].out,
            calls[argv].err,
        ), argv


# --- errors --------------------------------------------------------------------------

ERROR_CALLS = [
    ["job", "show", "999"],
    ["job", "show", "999", "--json"],
    ["job", "submit", "--vram", "20GB", "--", "true"],
    ["job", "submit", "--vram", "20GB", "--json", "--", "true"],
    ["job", "wait", "999"],
    ["job", "wait", "999", "--json"],
    ["job", "frobnicate"],
    ["job", "show", "abc"],
]


def normalise(text: str, nvq: Nvq) -> str:
    return text.replace(str(nvq.home.parent), "$TMP")


def test_error_lines_and_exit_codes(nvq: Nvq) -> None:
    doc = []
    for args in ERROR_CALLS:
        r = nvq.run(*args)
        doc.append(
            {
                "argv": " ".join(["nvq", *args]),
                "exit_code": r.code,
                "stdout": normalise(r.out, nvq),
                "stderr": normalise(r.err, nvq),
            }
        )
    check_text(GOLDEN / "errors.json", json.dumps(doc, indent=2) + "\n")


# --- JSON shapes ---------------------------------------------------------------------


def shape(value: Any) -> Any:
    """A document's structure without its values: key names in order and value types;
    a list stands for the shape of its first element."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    if value is None:
        return "null"
    return type(value).__name__  # bool, int, float, str


def shape_text(run: Run) -> str:
    doc = {"exit_code": run.code, "shape": shape(json.loads(run.out))}
    return json.dumps(doc, indent=2) + "\n"


STABLE_ENV = ("PATH", "HOME", "PYTHONDONTWRITEBYTECODE")


def test_json_document_shapes(nvq: Nvq) -> None:
    """A completed, a failed, a running and a pending job, then every read document."""
    # The jobs capture the submitting shell's environment: keep it the same everywhere.
    nvq.env = {k: v for k, v in nvq.env.items() if k.startswith("NVQ_") or k in STABLE_ENV}
    nvq.env["LANG"] = "C.UTF-8"  # else Python may add LC_CTYPE to a C locale
    runs: dict[str, Run] = {}
    nvq.nodes_up()  # else a submit may be accepted unchecked, and say so: another shape
    runs["job_submit"] = nvq.run("job", "submit", "--json", "--", "true")
    done_id = runs["job_submit"].json()["id"]
    failed_id = nvq.submit("--name", "bad", "--", "sh", "-c", "echo oops >&2; exit 3")["id"]
    runs["job_wait"] = nvq.run("job", "wait", str(done_id), str(failed_id), "--json")
    running_id = nvq.submit("--gpus", "2", "--vram", "20GiB", "--", "sleep", "600")["id"]
    nvq.wait_for(running_id, lambda j: j["state"] == "running")
    pending_id = nvq.submit("--vram", "20GiB", "--note", "waits", "--", "true")["id"]
    assert nvq.show(pending_id)["state"] == "pending"

    for label, job_id in [
        ("completed", done_id),
        ("failed", failed_id),
        ("running", running_id),
        ("pending", pending_id),
    ]:
        runs[f"job_show_{label}"] = nvq.run("job", "show", str(job_id), "--json")
    runs["job_ls"] = nvq.run("job", "ls", "--json")
    runs["queue_status"] = nvq.run("queue", "status", "--json")
    runs["queue_nodes"] = nvq.run("queue", "nodes", "--json")
    runs["queue_events"] = nvq.run("queue", "events", "--json")
    # One line of the stream: a job's end, with how it ended.
    runs["queue_events_follow"] = nvq.run(
        "queue", "events", "--follow", "--json", "--job", str(failed_id), "--kind", "end",
        "--until-done",
    )
    runs["queue_alerts"] = nvq.run("queue", "alerts", "--json")
    array = ["job", "submit", "--gpus", "0", "--array", "0-1", "--json", "--", "true"]
    runs["job_submit_array"] = nvq.run(*array)

    check_all({JSON_DIR / f"{name}.json": shape_text(run) for name, run in runs.items()})
