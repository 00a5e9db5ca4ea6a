"""`job submit`'s fast path (nvq.cli.fast_submit) parses the common argv shapes without
typer into the same SubmitArgs typer builds, hands every other shape to typer, and
through the real CLI says what typer says, byte for byte, for good and bad input."""

from __future__ import annotations

import json

import pytest

from nvq.cli.fast_submit import parse
from nvq.cli.submit_flow import SubmitArgs
from tests.cli.test_command_loading import loaded
from tests.cli.test_fast_path import both
from tests.cluster import Nvq


def test_common_shapes_parse_to_typers_values() -> None:
    assert parse(["--", "echo", "hi"]) == SubmitArgs(command=["echo", "hi"])
    assert parse(["--json", "--vram", "20GiB", "-n", "x", "--gpus=2", "echo hi"]) == SubmitArgs(
        command=["echo hi"], as_json=True, vram="20GiB", name="x", gpus=2
    )
    got = parse(["--env", "A=1", "--env", "B=2", "--tag", "t", "--priority", "-5",
                 "--no-snapshot", "--snapshot", "--no-email-on-failure", "--lane", "n:0",
                 "--", "--json", "x"])
    assert got == SubmitArgs(
        command=["--json", "x"], env=["A=1", "B=2"], tag=["t"], priority=-5,
        no_snapshot=True, in_place=False, email_on_failure=False, lane="n:0",
    )


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--vram", "1GiB"],  # no command: typer names what is missing
        ["--"],
        ["--vram"],
        ["--vram", "--json", "--", "x"],
        ["--name", "a", "--name", "b", "--", "x"],
        ["--gpus", "+2", "--", "x"],
        ["--gpus", "two", "--", "x"],
        ["-n=x", "--", "x"],
        ["--wait=1", "--", "x"],
        ["--in-place", "--snapshot", "--", "x"],
        ["--timeout", "5", "minutes", "--", "x"],  # a stray word before --
        ["echo", "hi"],  # words without --: click's to split
        ["--after", "7[3]", "--", "x"],
        ["--manifest", "m.toml"],
        ["--script", "run.sh"],
        ["--dry-run", "--", "x"],
        ["--help"],
        ["--frobnicate", "--", "x"],
    ],
)
def test_other_shapes_go_to_typer(args: list[str]) -> None:
    assert parse(args) is None


def test_the_switch_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse(["--", "x"]) is not None
    monkeypatch.setenv("NVQ_CLI_TYPER", "1")
    assert parse(["--", "x"]) is None


SAME = ("name", "command", "state", "gpus_requested", "vram_mb", "priority", "tags", "env",
        "lane", "timeout", "cwd")


def test_fast_and_typer_submit_alike(nvq: Nvq) -> None:
    nvq.nodes_up()  # --gpus 9 is refused at submit once the node has said hello
    bad = [
        ["--vram", "1Gx", "--", "true"],
        ["--gpus", "9", "--", "true"],
        ["--json", "--lane", "nosuch:0", "--", "true"],
        ["--env", "1A=x", "--", "true"],
        ["--timeout", "soon", "--json", "--", "true"],
        ["--after", "0", "--", "true"],
        ["--retries-on", "sometimes", "--", "true"],
        ["--begin", "yesterday-ish", "--", "true"],
        ["--wait", "--json", "--gpus", "0", "--", "sh", "-c", "exit 3"],
    ]
    for args in bad:
        fast, slow = both(nvq, ["job", "submit", *args])
        if "--wait" not in args:
            assert fast.code == 2, (args, fast)
        assert (fast.code, fast.err) == (slow.code, slow.err), args
        if "--json" in args and "--wait" not in args:
            assert fast.out == slow.out, args
    good = ["job", "submit", "--json", "--name", "x", "--vram", "1GiB", "--priority", "-3",
            "--tag", "a", "--env", "K=v", "--timeout", "5m", "--lane", "local:0", "--",
            "echo", "it's"]
    fast, slow = both(nvq, good)
    assert fast.code == slow.code == 0
    one, two = json.loads(fast.out), json.loads(slow.out)
    assert {k: one[k] for k in SAME} == {k: two[k] for k in SAME}
    assert one["command"] == "echo 'it'\"'\"'s'"
    code, names = loaded(nvq.env, "job", "submit", "--gpus", "0", "--", "true")
    assert code == 0
    assert not {n.split(".")[0] for n in names} & {"typer", "click"}, sorted(names)
