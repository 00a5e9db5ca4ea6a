"""Every read command answers the same through both doors: the fast path (nvq.cli.fast,
a plain argv, no typer) and typer (NVQ_CLI_TYPER=1) print the same bytes and exit
with the same status, against one real daemon; the fast path loads none of typer,
click, rich, anyio, asyncssh or aiosqlite (nor msgspec, on the plain wire); any other
argv goes to typer."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest

from nvq.cli.fast import COMMANDS, fast_command
from tests.cli.test_command_loading import loaded
from tests.cluster import Nvq, Run, make_nvq

# "3s ago", a running job's runtime: they move between the two calls.
DURATION = re.compile(r"\b\d+[smhd](?:\d+[smhd])*\b")
HEAVY = ("typer", "click", "rich", "textual", "anyio", "asyncssh", "aiosqlite")


@pytest.fixture(scope="module")
def queue(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Nvq, dict[str, str]]]:
    """One daemon with a job in each state (a failed one opens an alert) and a
    reservation: the jobs' ids by state."""
    nvq = make_nvq(tmp_path_factory.mktemp("fast"))
    try:
        done = nvq.submit("--name", "done", "--env", "API_TOKEN=hush", "--", "sh", "-c",
                          "echo out; echo err >&2; echo 3 > $NVQ_ARTIFACTS/step")["id"]
        failed = nvq.submit("--name", "bad", "--", "sh", "-c", "echo oops; exit 3")["id"]
        assert nvq.wait(done, failed)[0] == 1
        # its final sync follows the exit by a moment: the listing is then stable
        deadline = time.monotonic() + 120
        while not nvq.json("job", "artifacts", str(done))["files"]:
            assert time.monotonic() < deadline, "the final sync never came"
            time.sleep(0.05)
        nvq.ok("job", "result", str(done), "--set", '{"loss": 0.25, "tag": "\u00e9", "n": [1]}')
        running = nvq.submit("--gpus", "2", "--vram", "20GiB", "--", "sleep", "600")["id"]
        nvq.wait_for(running, lambda j: j["state"] == "running")
        pending = nvq.submit("--after", str(running), "--note", "waits", "--", "true")["id"]
        nvq.ok("reserve", "add", "night", "--cards", "local:0", "--start", "10h", "--end", "12h",
               "--note", "later")
        ids = {"done": done, "failed": failed, "running": running, "pending": pending}
        yield nvq, {k: str(v) for k, v in ids.items()}
    finally:
        nvq.shutdown()


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
    out = MOVING.sub(r'"\1": T', DURATION.sub("T", run.out))
    return run.code, out, DURATION.sub("T", run.err)


# Every read command of the fast path, in the shapes it takes ({state}: that job's id).
CALLS = [
    *(["job", "show", f"{{{s}}}"] for s in ("done", "failed", "running", "pending")),
    *(["job", "show", f"{{{s}}}", "--json"] for s in ("done", "running")),
    ["job", "show", "999"],
    ["job", "show", "--json", "999"],
    ["job", "ls"],
    ["job", "ls", "--json"],
    ["job", "ls", "--limit", "1"],
    ["job", "ls", "--all", "--json"],
    ["job", "ls", "--limit", "0"],
    ["job", "ls", "--all", "--limit", "2", "--json"],
    ["job", "ls", "--array", "999"],
    ["job", "ls", "--state", "failed"],
    ["job", "ls", "--held", "--json"],
    ["job", "ls", "--user", "nobody", "--json"],
    ["job", "ls", "--tag", "none", "--limit", "3"],
    ["job", "ls", "--since", "{failed}", "--json"],
    ["job", "ls", "--since", "2h", "--state", "done"],
    ["job", "ls", "--since", "yesterday"],
    ["job", "ls", "--state", "sleeping", "--json"],
    ["job", "ls", "--active"],
    ["job", "ls", "--active", "--json", "--limit", "1"],
    ["job", "ls", "--active", "--state", "completed", "--json"],
    ["job", "result", "{done}"],
    ["job", "result", "{done}", "--json"],
    ["job", "result", "{failed}"],
    ["job", "result", "--json", "999"],
    ["job", "why", "{pending}"],
    ["job", "why", "{running}", "--json"],
    ["job", "why", "999"],
    ["job", "logs", "{failed}"],
    ["job", "logs", "--json", "{done}"],
    ["job", "logs", "{done}", "-n", "1"],
    ["job", "logs", "{failed}", "--stderr", "--json"],
    ["job", "logs", "--lines", "-1", "--streams", "{done}"],
    ["job", "logs", "{failed}", "--stdout", "--stderr"],
    ["job", "logs", "{done}", "--attempt", "1", "-n", "5", "--stdout"],
    ["job", "logs", "{done}", "--attempt", "9"],
    ["job", "logs", "{done}", "-f", "--raw"],
    ["job", "artifacts", "{done}"],
    ["job", "artifacts", "--json", "{failed}"],
    ["job", "artifacts", "999"],
    ["queue", "status"],
    ["queue", "status", "--json"],
    ["queue", "nodes"],
    ["queue", "nodes", "--json", "--procs", "--include-ignored"],
    ["queue", "alerts", "--all"],
    ["queue", "alerts", "--detail", "--json"],
    ["queue", "lanes"],
    ["queue", "lanes", "--json"],
    ["queue", "lane", "local:1"],
    ["queue", "lane", "nowhere:0", "--json"],
    ["queue", "events"],
    ["queue", "events", "--json"],
    ["node", "status", "local"],
    ["node", "status", "nowhere", "--json"],
    ["node", "health"],
    ["node", "health", "loc", "--json"],
    ["node", "health", "nowhere"],
    ["cluster", "status"],
    ["cluster", "status", "nowhere", "--json"],
    ["reserve", "ls"],
    ["reserve", "ls", "--json"],
    ["image", "ls"],
    ["image", "ls", "--json"],
]
# figures that move every second whatever path prints them
MOVING = re.compile(r'"(uptime_s|last_seen)": [0-9.]+')


def test_the_shapes_cover_every_fast_command() -> None:
    assert {tuple(s[:2]) for s in CALLS} == set(COMMANDS)


@pytest.mark.parametrize("shape", CALLS, ids=" ".join)
def test_fast_and_typer_print_the_same(queue: tuple[Nvq, dict[str, str]], shape: list[str]) -> None:
    nvq, ids = queue
    args = [a.format(**ids) for a in shape]
    assert fast_command(args) is not None, args
    # a GPU sample or a clock's second landing between the two calls may move a
    # figure: ask again once (a difference in what the paths print is there every time)
    fast, slow = both(nvq, args)
    if steady(fast) != steady(slow):
        fast, slow = both(nvq, args)
    assert steady(fast) == steady(slow), args


def test_secrets_stay_hidden_and_refusals_say_one_line(queue: tuple[Nvq, dict[str, str]]) -> None:
    nvq, ids = queue
    shown = nvq.run("job", "show", ids["done"], "--json").out
    assert "API_TOKEN" in shown and "hush" not in shown
    assert nvq.run("job", "logs", ids["done"], "--stdout").out == "out\n"
    assert nvq.run("job", "show", "999").err == "nvq: no job with id 999\n"
    alerts = nvq.run("queue", "alerts")
    assert alerts.code == 1 and "exit" in alerts.out  # the failed job's alert is open
    missing = nvq.run("node", "health", "nowhere")
    assert (missing.code, missing.err) == (2, "nvq: no single node named 'nowhere' (nodes: local)\n")


def imported(args: list[str], env: dict[str, str]) -> set[str]:
    """The top-level packages `nvq ARGS` loads."""
    code, names = loaded(env, *args)
    assert code in (0, 1), args
    return {name.split(".")[0] for name in names}


def test_reads_load_no_typer_and_typer_is_the_other_path(
    queue: tuple[Nvq, dict[str, str]],
) -> None:
    nvq, ids = queue
    # the plain wire: nothing but the standard library (msgspec and typing cost more
    # than the interpreter's start); `job logs` streams on it too
    for args in (["job", "logs", ids["done"]], ["job", "logs", ids["failed"], "--json"],
                 ["job", "show", ids["done"]], ["job", "why", ids["pending"], "--json"],
                 ["queue", "status"], ["job", "ls", "--json"], ["queue", "nodes"],
                 ["queue", "alerts", "--json"], ["queue", "events"], ["node", "health"],
                 ["job", "ls", "--state", "failed", "--since", "2h"], ["image", "ls"],
                 ["job", "result", ids["done"], "--json"]):
        loaded = imported(args, nvq.env)
        assert "nvq" in loaded, args
        assert not loaded.intersection({*HEAVY, "msgspec", "typing"}), (args, sorted(loaded))
    forced = imported(["job", "show", ids["done"]], {**nvq.env, "NVQ_CLI_TYPER": "1"})
    assert {"typer", "click"} <= forced
    # any other shape is typer's, and says what typer says
    assert {"typer", "click"} <= imported(["job", "show", "--logs", "1", ids["done"]], nvq.env)


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
        ["job", "ls", "--state", "failed", "--state", "done"],
        ["job", "ls", "--user"],
        ["job", "ls", "--user", "-x"],
        ["job", "ls", "--user=ana"],
        ["job", "ls", "--tag", "caf\u00e9"],
        ["job", "result"],
        ["job", "result", "7", "8"],
        ["job", "result", "7", "--set", "{}"],
        ["job", "result", "--array", "7"],
        ["image", "ls", "extra"],
        ["job", "ls", "7"],
        ["job", "logs", "7", "-n"],
        ["job", "logs", "7", "-n", "x"],
        ["job", "logs", "7", "-n", "+3"],
        ["job", "logs", "7", "--lines=3"],
        ["job", "logs", "7", "-n3"],
        ["job", "logs", "7", "-n", "1", "--lines", "2"],
        ["job", "logs", "7", "-f", "--follow"],
        ["job", "logs", "7", "-n", "--json"],
        ["job", "why"],
        ["job", "why", "7", "--", "--json"],
        ["queue", "status", "extra"],
        ["queue", "nodes", "--procs", "--procs"],
        ["queue", "nodes", "--procs=1"],
        ["queue", "alerts", "--detail", "7"],
        ["queue", "lane"],
        ["queue", "lane", "local:0", "pause"],
        ["queue", "lane", "--to", "head"],
        ["queue", "events", "--since", "3"],
        ["queue", "events", "-f"],
        ["node", "status"],
        ["node", "status", "-x"],
        ["node", "status", "n\u00e9"],
        ["node", "health", "a", "b"],
        ["node", "health", "--"],
        ["queue"],
        ["--help"],
        [],
    ],
)
def test_other_shapes_go_to_typer(args: list[str]) -> None:
    assert fast_command(args) is None


def test_the_switch_turns_the_fast_path_off(monkeypatch: pytest.MonkeyPatch) -> None:
    assert fast_command(["job", "show", "7", "--json"]) is not None
    assert fast_command(["queue", "nodes", "--json", "--procs"]) is not None
    monkeypatch.setenv("NVQ_CLI_TYPER", "1")
    assert fast_command(["job", "show", "7", "--json"]) is None
