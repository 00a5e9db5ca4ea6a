"""Reaching into a running job through the real CLI: `job exec` runs beside it with its
environment and leaves it running; `job forward` lets a local HTTP client reach the
server the job runs on its own $NVQ_PORT. On the local node and over an sshd node
(where both ride the daemon's existing SSH connection to the node)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.request
from typing import Any

import pytest

from tests.cli.test_remote import pair  # noqa: F401 - the fixture
from tests.cluster import Nvq, use_sshd_node
from tests.harness.sshd import free_port


@pytest.fixture(params=["local", "sshd"])
def where(request: pytest.FixtureRequest, nvq: Nvq) -> str:
    if request.param == "sshd":
        (node,) = request.getfixturevalue("sshd_nodes")(1)
        use_sshd_node(nvq, node)
    return str(request.param)


def logs_until(nvq: Nvq, job_id: int, text: str, timeout: float = 120) -> None:
    """Until the job's output says `text` (before its node has started it, `job logs`
    says there is nothing yet)."""
    deadline = time.monotonic() + timeout
    while text not in nvq.run("job", "logs", str(job_id)).out:
        job = nvq.show(job_id)
        assert job["state"] in ("pending", "running"), job
        assert time.monotonic() < deadline, f"{text!r} never in job {job_id}'s output: {job}"
        time.sleep(0.1)


def first_json(stream: Any) -> dict[str, Any]:
    text = ""
    while True:
        line = stream.readline()
        assert line, f"no JSON document before the end: {text!r}"
        text += line
        try:
            return json.loads(text)  # type: ignore[no-any-return]
        except json.JSONDecodeError:
            continue


def test_exec_and_forward_reach_a_running_job(nvq: Nvq, where: str) -> None:
    assert nvq.cwd is not None
    (nvq.cwd / "hello.txt").write_text("hello from the job's copy\n")
    job = nvq.submit(
        "--gpus", "1", "--vram", "1GiB", "--env", "FOO=bar", "--",
        "python3 -u -m http.server --bind 127.0.0.1 $NVQ_PORT",
    )
    logs_until(nvq, job["id"], "Serving HTTP")
    shown = nvq.show(job["id"])
    assert shown["port"], shown

    # exec: the job's world, the command's exit code, the job untouched
    r = nvq.run("job", "exec", str(job["id"]), "--", "sh", "-c",
                'echo "env $FOO $CUDA_VISIBLE_DEVICES $NVQ_JOB_ID $NVQ_PORT"; ls; exit 4')
    assert r.code == 4, r.err
    cards = ",".join(map(str, shown["gpus"]))
    assert f"env bar {cards} {job['id']} {shown['port']}" in r.out
    assert "hello.txt" in r.out  # its working copy is the directory
    assert nvq.show(job["id"])["state"] == "running"

    # forward: the default port is the job's own
    fwd = subprocess.Popen(
        [sys.executable, "-m", "nvq", "job", "forward", str(job["id"]), "--json"],
        env=nvq.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert fwd.stdout is not None
        doc = first_json(fwd.stdout)
        assert doc["port"] == shown["port"] and doc["url"].startswith("http://127.0.0.1:")
        for _ in range(2):  # each connection is its own relay
            with urllib.request.urlopen(doc["url"] + "hello.txt", timeout=30) as resp:
                assert resp.read() == b"hello from the job's copy\n"
    finally:
        fwd.send_signal(signal.SIGINT)
        assert fwd.wait(timeout=30) == 0
    assert nvq.show(job["id"])["state"] == "running"
    nvq.ok("job", "cancel", str(job["id"]))


def test_exec_without_a_terminal_keeps_the_streams_apart(nvq: Nvq, where: str) -> None:
    job = nvq.submit("--gpus", "0", "--", "sleep 600")
    nvq.wait_for(job["id"], lambda j: j["state"] == "running" and j["pid"])
    script = 'while read -r line; do echo "got $line"; done; echo to-stderr >&2; exit 3'
    # stdin is a pipe here: no pty, as `docker exec` without -t
    r = nvq.run("job", "exec", str(job["id"]), "--", "sh", "-c", script, input="a\nb\n")
    assert (r.code, r.out, r.err) == (3, "got a\ngot b\n", "to-stderr\n")
    # what a terminal would act on (^C, ^D, ^Z) or echo; no \r (the harness reads text)
    binary = ("\x03\x04\x1a\t" + "".join(map(chr, range(32, 127))) + "\n") * 300
    r = nvq.run("job", "exec", str(job["id"]), "--", "cat", input=binary)
    assert (r.code, r.out == binary, r.err) == (0, True, "")
    # -t asks for a terminal anyway: its one stream carries both
    r = nvq.run("job", "exec", "-t", str(job["id"]), "--", "sh", "-c", "echo out; echo err >&2")
    assert (r.code, r.out, r.err) == (0, "out\nerr\n", ""), (r.out, r.err)
    assert nvq.show(job["id"])["state"] == "running"
    nvq.ok("job", "cancel", str(job["id"]))


def test_exec_into_a_job_that_does_not_run_says_so(nvq: Nvq) -> None:
    done = nvq.submit("--gpus", "0", "--", "true")
    assert nvq.wait(done["id"], timeout=120)[0] == 0
    r = nvq.run("job", "exec", str(done["id"]), "--", "true")
    assert r.code == 1 and r.err.strip() == f"nvq: job {done['id']} is not running (it is completed)"
    r = nvq.run("job", "forward", str(done["id"]))
    assert r.code == 1 and "is not running" in r.err


def test_forward_from_a_laptop_over_remote(pair: tuple[Nvq, Nvq]) -> None:  # noqa: F811
    host, laptop = pair
    job = laptop.submit(
        "--gpus", "0", "--no-snapshot", "--workdir", str(host.home.parent), "--",
        "python3 -u -m http.server --bind 127.0.0.1 $NVQ_PORT",
    )
    logs_until(host, job["id"], "Serving HTTP")
    port = host.show(job["id"])["port"]
    # the port here by its own name, after the port there; then by the name it had
    # before `--local` was only the [remote] opt-out (after the command words it is
    # job forward's, not dropped as the opt-out was)
    for args in ([str(port), "--port-local", str(free_port())], ["--local", str(free_port())]):
        fwd = subprocess.Popen(
            [sys.executable, "-m", "nvq", "job", "forward", str(job["id"]), *args, "--json"],
            env=laptop.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        try:
            assert fwd.stdout is not None
            doc = first_json(fwd.stdout)
            assert doc["port"] == port and doc["local_port"] == int(args[-1]), (args, doc)
            with urllib.request.urlopen(doc["url"], timeout=30) as resp:
                assert b"Directory listing" in resp.read()
        finally:
            fwd.send_signal(signal.SIGINT)
            assert fwd.wait(timeout=30) == 0
    twice = laptop.run("job", "forward", str(job["id"]), "--port-local", "1", "--local", "2")
    assert twice.code == 2 and twice.err == "nvq: give the port on this machine once, as --port-local\n"
    host.ok("job", "cancel", str(job["id"]))
