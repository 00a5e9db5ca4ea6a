"""An agent that knows nvq only from `nvq skill` runs a 3-config sweep and names the
winner: the sweep block's own command lines, run as the skill shows them (only the
array id, which the skill writes as 7, becomes the one `job submit --json` answered)."""

from __future__ import annotations

import shlex
import sys

from nvq.agents import skill
from tests.cluster import Nvq

TRAIN = """\
import json, os, sys
index = int(sys.argv[sys.argv.index("--lr-index") + 1])
lr = [0.1, 0.01, 0.001][index]
loss = {0.1: 0.9, 0.01: 0.2, 0.001: 0.5}[lr]
with open(os.path.join(os.environ["NVQ_JOB_DIR"], "result.json"), "w") as f:
    json.dump({"lr": lr, "loss": loss}, f)
"""


def _sweep_block() -> list[str]:
    """The command lines of the skill's sweep example, in order."""
    text = skill.text()
    after = text[text.index("A sweep, and naming the winner"):]
    block = after.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.startswith("nvq ")]


def test_a_sweep_run_from_the_skill_names_its_winner(nvq: Nvq) -> None:
    assert nvq.cwd is not None
    (nvq.cwd / "train.py").write_text(TRAIN)
    submit, wait, result = _sweep_block()
    assert submit.startswith("nvq job submit --json") and "--array 0-2" in submit
    argv = shlex.split(submit)[1:]
    # `python` as the agent's shell finds it: this interpreter
    argv[argv.index("python")] = sys.executable
    array = nvq.ok(*argv).json()["id"]

    def as_shown(line: str) -> list[str]:
        words = shlex.split(line)[1:]
        return [str(array) if w == "7" else w for w in words]

    waited = nvq.run(*as_shown(wait))
    assert waited.code == 0, waited.out + waited.err
    table = nvq.ok(*as_shown(result)).json()
    members = table["members"]
    assert [m["state"] for m in members] == ["completed"] * 3
    best = min(members, key=lambda m: m["result"]["loss"])
    assert (best["index"], best["result"]["lr"]) == (1, 0.01)
