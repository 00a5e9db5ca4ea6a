"""`nvq job shell` in a real terminal (tmux): it waits while the card is taken, then is a
shell on the node with the job's environment; its exit is the job's, and the card is
free the moment `nvq` returns. The same over an sshd node, where the terminal rides
the daemon's own SSH connection to the node."""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cli.test_remote import pair  # noqa: F401 - the fixture
from tests.cluster import Nvq, use_sshd_node
from tests.harness.tmux import Tmux

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

# Typed text is echoed before the shell reads it: what is waited for is only what
# the shell itself prints (the quotes split it in the typed line).
PROMPT = "PS1='rea''dy> '"


@pytest.fixture
def tmux(nvq: Nvq) -> Iterator[Tmux]:
    t = Tmux(nvq.home.parent / "tmux.sock", nvq.env, session="sh")
    yield t
    t.close()


@pytest.fixture(params=["local", "sshd"])
def where(request: pytest.FixtureRequest, nvq: Nvq) -> str:
    if request.param == "sshd":
        (node,) = request.getfixturevalue("sshd_nodes")(1)
        use_sshd_node(nvq, node)
    return str(request.param)


def nvq_in_tmux(nvq: Nvq, args: str) -> str:
    # After nvq ends, the pane stays open and says how it ended.
    return f"cd {nvq.cwd} && {sys.executable} -m nvq {args}; echo nvq-exited=$?; sleep 600"


def test_shell_waits_for_the_card_then_is_the_job(nvq: Nvq, tmux: Tmux, where: str) -> None:
    blocker = nvq.submit("--gpus", "2", "--vram", "23GiB", "--", "sleep", "600")
    nvq.wait_for(blocker["id"], lambda j: j["state"] == "running")
    tmux.start(nvq_in_tmux(nvq, "job shell --gpus 1 --vram 1GiB"))
    screen = tmux.until("position 1")
    assert "pending" in screen
    nvq.ok("job", "cancel", str(blocker["id"]))
    tmux.until("placed on local:")
    tmux.keys(PROMPT, "Enter")
    tmux.until("ready>")
    tmux.keys("echo c''vd=$CUDA_VISIBLE_DEVICES port=$NVQ_PORT tty=$(tty)", "Enter")
    screen = tmux.until("cvd=")
    shell: dict[str, Any] = next(
        j for j in nvq.json("job", "ls")["jobs"] if j["interactive"]
    )
    assert f"cvd={','.join(map(str, shell['gpus']))} port={shell['port']} tty=/dev/pts/" in screen
    tmux.keys("exit 3", "Enter")
    tmux.until("nvq-exited=3")
    # Ended, and its card released, before nvq returned.
    done = nvq.show(shell["id"])
    assert (done["state"], done["exit_code"]) == ("failed", 3)
    assert [j["id"] for j in nvq.json("job", "ls")["jobs"] if j["state"] == "running"] == []


def test_cancel_ends_the_session_with_a_word_in_the_terminal(nvq: Nvq, tmux: Tmux) -> None:
    tmux.start(nvq_in_tmux(nvq, "job shell --gpus 0"))
    tmux.until("placed on local:cpu")
    (shell,) = [j for j in nvq.json("job", "ls")["jobs"] if j["interactive"]]
    assert shell["name"] == "interactive"
    # its progress line is how long its terminal has been idle
    nvq.wait_for(shell["id"], lambda j: j["progress"] == "interactive: active")
    # the tables say what holds the card: a person at a prompt
    row = next(ln for ln in nvq.ok("job", "ls").out.splitlines() if ln.startswith(str(shell["id"])))
    assert row.split()[1] == "interactive", row
    nvq.ok("job", "cancel", str(shell["id"]))
    screen = tmux.until("nvq-exited=1")
    assert "the queue ended this session" in screen
    assert f"job {shell['id']} cancelled" in screen


def test_shell_from_a_laptop_over_remote(pair: tuple[Nvq, Nvq]) -> None:  # noqa: F811
    _, laptop = pair
    t = Tmux(laptop.home.parent / "tmux.sock", laptop.env, session="sh")
    try:
        t.start(nvq_in_tmux(laptop, "job shell --gpus 1 --vram 1GiB"))
        t.until("placed on local:")
        t.keys(PROMPT, "Enter")
        t.until("ready>")
        t.keys("echo c''vd=$CUDA_VISIBLE_DEVICES term=$TERM size=$(stty size)", "Enter")
        screen = t.until("cvd=")
        # the laptop's terminal, through two relays: its type and its size
        assert re.search(r"cvd=\d term=\S+ size=50 200", screen), screen
        t.keys("exit 3", "Enter")
        t.until("nvq-exited=3")
    finally:
        t.close()


def test_an_idle_session_is_warned_then_ended(nvq: Nvq, tmux: Tmux) -> None:
    nvq.write_config('[queue]\ninteractive_idle = "1s"\ninteractive_grace = "1s"\n')
    tmux.start(nvq_in_tmux(nvq, "job shell --gpus 1 --vram 1GiB"))
    tmux.until("this session has been idle for 1s: it ends in 1s unless you type something")
    screen = tmux.until("nvq-exited=1")
    assert "ending this idle session" in screen and "cancelled by idle release" in screen
    (job,) = nvq.json("job", "ls")["jobs"]
    assert job["state"] == "cancelled"
    assert [e["kind"] for e in nvq.events() if e["kind"] == "session_idle"] == ["session_idle"]


def test_ctrl_c_while_waiting_withdraws_the_shell(nvq: Nvq, tmux: Tmux) -> None:
    blocker = nvq.submit("--gpus", "2", "--vram", "23GiB", "--", "sleep", "600")
    nvq.wait_for(blocker["id"], lambda j: j["state"] == "running")
    tmux.start(nvq_in_tmux(nvq, "job shell --gpus 1 --vram 1GiB"))
    tmux.until("position 1")
    tmux.keys("C-c")
    screen = tmux.until("nvq-exited=130")
    shell = next(j for j in nvq.json("job", "ls")["jobs"] if j["interactive"])
    assert f"job {shell['id']} withdrawn" in screen
    assert nvq.wait_for(shell["id"], lambda j: j["state"] == "cancelled")
    nvq.ok("job", "cancel", str(blocker["id"]))
