"""The read fast path (nvq.cli.fast) prints, byte for byte, what typer prints for the
same argv, exits with the same status, and loads none of typer, click, rich, anyio,
asyncssh or aiosqlite; any other argv goes to typer."""

from __future__ import annotations

import re

import pytest

from nvq.cli.fast import fast_command
from tests.cli.test_command_loading import loaded
from tests.cluster import Nvq, Run

# "3s ago", a running job's runtime: they move between the two calls.
DURATION = re.compile(r"\b\d+[smhd](?:\d+[smhd])*\b")
HEAVY = ("typer", "click", "rich", "textual", "anyio", "asyncssh", "aiosqlite")


def both(nvq: Nvq, args: list[str]) -> tuple[Run, Run]:
    """(the fast path's run, typer's run) of `nvq ARGS`."""
    fast = nvq.run(*args)
    saved = dict(nvq.env)
    nvq.env["NVQ_CLI_TYPER"] = "1"
    try:
        slow = nvq.run(*args)
    finally:
        nvq.env = saved
    return fast, slow


def steady(run: Run) -> tuple[int, str, str]:
    return run.code, DURATION.sub("T", run.out), DURATION.sub("T", run.err)


def imported(args: list[str], env: dict[str, str]) -> set[str]:
    """The top-level packages `nvq ARGS` loads."""
    code, names = loaded(env, *args)
    assert code == 0, args
    return {name.split(".")[0] for name in names}


def test_fast_and_typer_print_the_same(nvq: Nvq) -> None:
    done = nvq.submit("--name", "done", "--env", "API_TOKEN=hush", "--", "sh", "-c",
                      "echo out; echo err >&2")["id"]
    failed = nvq.submit("--name", "bad", "--", "sh", "-c", "echo oops; exit 3")["id"]
    assert nvq.wait(done, failed)[0] == 1
    running = nvq.submit("--gpus", "2", "--vram", "20GiB", "--", "sleep", "600")["id"]
    nvq.wait_for(running, lambda j: j["state"] == "running")
    pending = nvq.submit("--after", str(running), "--note", "waits", "--", "true")["id"]
    calls = [["queue", "status"], ["queue", "status", "--json"], ["job", "ls"],
             ["job", "ls", "--json"], ["job", "show", "999"], ["job", "show", "999", "--json"],
             ["job", "logs", "999"], ["job", "logs", "--json", "999"]]
    for job in (done, failed, running, pending):
        calls += [["job", "show", str(job)], ["job", "show", str(job), "--json"],
                  ["job", "show", "--json", f"00{job}"], ["job", "logs", str(job)],
                  ["job", "logs", str(job), "--json"]]
    for args in calls:
        assert fast_command(args) is not None, args
        # a GPU sample landing between the two calls may move a figure: ask again once
        # (a difference in what the paths print is there every time)
        fast, slow = both(nvq, args)
        if steady(fast) != steady(slow):
            fast, slow = both(nvq, args)
        assert steady(fast) == steady(slow), args
    assert "API_TOKEN" in nvq.run("job", "show", str(done), "--json").out
    assert "hush" not in nvq.run("job", "show", str(done), "--json").out
    assert nvq.run("job", "logs", str(done), "--stdout").out == "out\n"
    assert nvq.run("job", "show", "999").err == "nvq: no job with id 999\n"


def test_reads_load_no_typer_and_typer_is_the_other_path(nvq: Nvq) -> None:
    job = nvq.submit("--", "true")["id"]
    nvq.wait(job)
    for args in (["job", "logs", str(job)],):
        loaded = imported(args, nvq.env)
        assert "nvq" in loaded and "msgspec" in loaded, args
        assert not loaded.intersection(HEAVY), (args, sorted(loaded.intersection(HEAVY)))
    # the plain wire: nothing but the standard library (msgspec and typing cost more
    # than the interpreter's start)
    for args in (["job", "show", str(job)], ["job", "show", str(job), "--json"],
                 ["queue", "status"], ["queue", "status", "--json"], ["job", "ls"],
                 ["job", "ls", "--json"]):
        loaded = imported(args, nvq.env)
        assert "nvq" in loaded, args
        assert not loaded.intersection({*HEAVY, "msgspec", "typing"}), (args, sorted(loaded))
    forced = imported(["job", "show", str(job)], {**nvq.env, "NVQ_CLI_TYPER": "1"})
    assert {"typer", "click"} <= forced
    # any other shape is typer's, and says what typer says
    assert {"typer", "click"} <= imported(["job", "show", "--logs", "1", str(job)], nvq.env)


@pytest.mark.parametrize(
    "args",
    [
        ["job", "show"],
        ["job", "show", "+7"],
        ["job", "show", "7_0"],
        ["job", "show", "\u0667"],  # an Arabic-Indic seven: int() takes it, click's words differ
        ["job", "show", "-7"],
        ["job", "show", "7", "8"],
        ["job", "show", "7[3]"],
        ["job", "show", "7", "--json", "--json"],
        ["job", "show", "7", "--help"],
        ["job", "show", "7", "--logs", "3"],
        ["job", "ls", "--active"],
        ["job", "ls", "7"],
        ["job", "logs", "7", "-f"],
        ["job", "why", "7"],
        ["queue", "status", "extra"],
        ["queue"],
        ["--help"],
        [],
    ],
)
def test_other_shapes_go_to_typer(args: list[str]) -> None:
    assert fast_command(args) is None


def test_the_switch_turns_the_fast_path_off(monkeypatch: pytest.MonkeyPatch) -> None:
    assert fast_command(["job", "show", "7", "--json"]) is not None
    monkeypatch.setenv("NVQ_CLI_TYPER", "1")
    assert fast_command(["job", "show", "7", "--json"]) is None
