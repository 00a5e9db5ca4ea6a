"""Integration harness: a throw-away NVQ_HOME driven only through the real `nvq` CLI,
with a real daemon, real runners and real job processes. Nothing is mocked but the
GPUs (the runner's fake backend)."""

from __future__ import annotations

import json
import math
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nvq.client.errors import ClientError
from nvq.client.plain import NotAnswering, ask
from nvq.client.sync import Client
from nvq.home import Home
from tests.harness.cli_calls import run_nvq

# node_grace 2s with kill_grace 2s leaves no room for a lease (nvq.config.lease): the
# harness says so; partition tests set a longer node_grace and a lease of their own.
LEASE_OFF = 'lease = "off"'

DEFAULT_GPUS = """\
cuda = "13.0"

[[gpu]]
name = "Fake A100"
memory = "24GiB"

[[gpu]]
name = "Fake A100"
memory = "24GiB"
"""


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


@dataclass
class Nvq:
    home: Path
    env: dict[str, str] = field(default_factory=dict)
    runner_home: Path | None = None  # set when the node is an sshd node
    # where `nvq` is typed: the submit directory a job snapshots (empty unless a test
    # puts a project there)
    cwd: Path | None = None

    @property
    def gpus_file(self) -> Path:
        return self.home.parent / "gpus.toml"

    @property
    def node_home(self) -> Path:
        return self.runner_home or self.home / "node"

    def write_gpus(self, text: str) -> None:
        tmp = self.gpus_file.with_suffix(".tmp")
        tmp.write_text(slow_init(text))
        tmp.replace(self.gpus_file)

    def write_config(self, text: str) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "config.toml").write_text(text)

    def run(self, *args: str, timeout: float = 60, input: str | None = None) -> Run:
        """`nvq ARGS` as a process of its own (forked from one that imported the CLI
        once: tests.harness.cli_calls), with this queue's environment, in `cwd`."""
        code, out, err = run_nvq(
            list(args), env=self.env, cwd=self.cwd, input=input, timeout=timeout
        )
        return Run(code, out, err)

    def ok(self, *args: str, timeout: float = 60) -> Run:
        r = self.run(*args, timeout=timeout)
        assert r.code == 0, f"nvq {' '.join(args)} exited {r.code}: {r.err or r.out}"
        return r

    def json(self, *args: str, timeout: float = 60) -> Any:
        return self.ok(*args, "--json", timeout=timeout).json()

    def submit(self, *args: str) -> dict[str, Any]:
        flags, sep, cmd = _split(args)
        return self.ok("job", "submit", *flags, "--json", *sep, *cmd).json()  # type: ignore[no-any-return]

    def show(self, job_id: int) -> dict[str, Any]:
        return self.json("job", "show", str(job_id))  # type: ignore[no-any-return]

    def wait(self, *ids: int, timeout: float = 60) -> tuple[int, list[dict[str, Any]]]:
        """Until every job has ended (or `timeout` runs out): `job wait`'s exit code
        and the jobs as they stand. `job wait` answers at the first job that ends
        badly, so the ones still going are waited for again; the code is 1 when any
        ended badly, else `job wait`'s last (0 all completed, 2 the timeout ran out)."""
        deadline = time.monotonic() + timeout
        seen: dict[int, dict[str, Any]] = {}
        left, bad = list(ids), False
        while True:
            give = max(1, math.ceil(deadline - time.monotonic()))
            r = self.run(
                "job", "wait", *map(str, left), "--timeout", str(give), "--json",
                timeout=give + 30,
            )
            doc = r.json()
            assert "jobs" in doc, f"job wait answered {doc} (exit {r.code}; stderr {r.err!r})"
            seen.update((j["id"], j) for j in doc["jobs"])
            bad = bad or r.code == 1
            left = doc["still_going"]
            if r.code != 1 or not left:
                return (1 if bad else r.code), [seen[i] for i in ids]

    def wait_for(self, job_id: int, pred: Any, timeout: float = 60) -> dict[str, Any]:
        """Re-read a job until `pred(job)` holds (for states `job wait` does not end on).
        The deadline only stops a hung test: on a loaded machine a step can take long."""
        deadline = time.monotonic() + timeout
        while True:
            job = self._show_in_process(job_id)
            if job is None:
                job = self.show(job_id)
            if pred(job):
                return job
            if time.monotonic() > deadline:
                raise AssertionError(f"job {job_id} never got there: {job}")
            time.sleep(0.1)

    def nodes_up(self, count: int = 1, timeout: float = 60) -> list[dict[str, Any]]:
        """`queue nodes` once `count` nodes say `up` (their cards reported): a queue
        just started answers at once, before its runners have said hello."""
        deadline = time.monotonic() + timeout
        while True:
            nodes: list[dict[str, Any]] = self.json("queue", "nodes")["nodes"]
            if sum(n["state"] == "up" for n in nodes) >= count:
                return nodes
            if time.monotonic() > deadline:
                raise AssertionError(f"{count} node(s) never came up: {nodes}")
            time.sleep(0.1)

    def _show_in_process(self, job_id: int) -> dict[str, Any] | None:
        """`nvq job show ID --json` as its fast path asks for it, the very document the
        daemon formats, but from this process: a poll that spawned an interpreter ten
        times a second cost a waiting test more CPU than the queue it waits on. None
        where no daemon answers here (stopped, or the queue is [remote]): the CLI then
        asks as always, starting one or saying why not."""
        config = self.home / "config.toml"
        if config.exists() and "[remote]" in config.read_text():
            return None  # the CLI forwards to the queue host; a local daemon is not it
        try:
            data, _ = ask(Home(self.home).socket, {"type": "show", "id": job_id, "logs": 0}, "json")
        except NotAnswering:
            return None
        return json.loads(data)  # type: ignore[no-any-return]

    def events(self, since: int = 0) -> list[dict[str, Any]]:
        return self.json("queue", "events", "--since", str(since))["events"]  # type: ignore[no-any-return]

    def shutdown(self) -> None:
        """Stop the daemon and the local runner, and kill every job process left.

        The stop is asked from this process and the daemon's exit awaited here: `nvq
        daemon stop` (a process of its own, which tests of it run) waits until the
        daemon is reaped, and where the machine's init reaps orphans late that came
        seconds after it had exited, in every test's teardown."""
        pid = Home(self.home).read_pid()
        try:
            Client(self.home, autostart=False).stop_daemon()
        except ClientError:
            pid = None  # none answers here (a [remote] queue is its host's to stop)
        deadline = time.monotonic() + 30
        while pid is not None and not _exited(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        kill_processes_under(self.home.parent)


def _split(args: tuple[str, ...]) -> tuple[list[str], list[str], list[str]]:
    if "--" in args:
        i = args.index("--")
        return list(args[:i]), ["--"], list(args[i + 1 :])
    return list(args), [], []


def _exited(pid: int) -> bool:
    """Gone, or a zombie: exited, whether or not its parent has reaped it yet."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] in "ZX"


def kill_processes_under(root: Path) -> None:
    """Kill runners and jobs whose command line or working directory lies in `root`."""
    needle = str(root)
    me = os.getpid()
    victims: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if needle in cmdline or cwd.startswith(needle):
            victims.append(int(entry.name))
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def make_nvq(tmp: Path, *, gpus: str | None = DEFAULT_GPUS, sample_interval: float = 0.5) -> Nvq:
    home = tmp / "nvq"
    home.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NVQ_")}
    env["NVQ_HOME"] = str(home)
    env["NVQ_SAMPLE_INTERVAL"] = str(sample_interval)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["NVQ_CHECK_REPLIES"] = "1"  # a JobRecord in an answer fails it (reply_guard.py)
    project = tmp / "project"
    project.mkdir(exist_ok=True)
    nvq = Nvq(home=home, env=env, cwd=project)
    if gpus is None:
        env["NVQ_GPU_BACKEND"] = "none"
    else:
        nvq.write_gpus(gpus)
        env["NVQ_FAKE_GPUS"] = str(nvq.gpus_file)
        env["NVQ_GPU_BACKEND"] = "fake"
    return nvq


def slow_init(gpus: str) -> str:
    """`gpus` with the fake driver's first read made slow, when the suite runs with
    NVQ_TEST_SLOW_INIT=seconds (`make test-late-nodes`): every runner's hello then comes
    after a submit stops waiting for it, and a test that asks what only a reported
    node answers, before waiting for one, fails."""
    late = os.environ.get("NVQ_TEST_SLOW_INIT")
    return f"slow_init = {float(late)}\n{gpus}" if late else gpus


def _toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def write_mesh_config(
    nvq: Nvq,
    nodes: list[Any],
    *,
    gpus: str | list[str] = DEFAULT_GPUS,
    local_node: bool = False,
    queue_extra: str = "",
    sample_interval: float = 0.5,
    managed_runner: bool = False,
    keepalive: str = "0.5s",
) -> list[Path]:
    """Point `nvq` at sshd harness nodes named n0, n1, …, each with its own fake GPU
    file (returned, so a test can change a node's cards while it runs)."""
    files: list[Path] = []
    lines = [
        "[queue]",
        f"local_node = {'true' if local_node else 'false'}",
        'node_grace = "2s"',
        LEASE_OFF,
        f'ssh_keepalive = "{keepalive}"',
        'ssh_connect_timeout = "3s"',
        'kill_grace = "2s"',
        queue_extra,
        "",
    ]
    for i, node in enumerate(nodes):
        text = gpus[i] if isinstance(gpus, list) else gpus
        gpu_file = nvq.home.parent / f"gpus-n{i}.toml"
        gpu_file.write_text(slow_init(text))
        files.append(gpu_file)
        lines += [
            "[[nodes]]",
            f'name = "n{i}"',
            f'host = "{node.host}"',
            f"port = {node.port}",
            f"user = {_toml_str(node.user)}",
            f"identity = {_toml_str(str(node.identity))}",
            f"known_hosts = {_toml_str(str(node.known_hosts))}",
            f"home = {_toml_str(str(node.home))}",
            "" if managed_runner else f"python = {_toml_str(sys.executable)}",
            "[nodes.env]",
            f"NVQ_FAKE_GPUS = {_toml_str(str(gpu_file))}",
            'NVQ_GPU_BACKEND = "fake"',
            f'NVQ_SAMPLE_INTERVAL = "{sample_interval}"',
            "",
        ]
    nvq.write_config("\n".join(lines))
    return files


def use_sshd_node(nvq: Nvq, node: Any, *, sample_interval: float = 0.5) -> None:
    """Run `nvq`'s queue on one sshd node instead of the queue host, under the same
    name ("local") and with the same fake GPU file, so a test written for the local
    node runs unchanged over SSH."""
    nvq.write_config(
        "\n".join(
            [
                "[queue]",
                "local_node = false",
                'node_grace = "2s"',
                LEASE_OFF,
                'ssh_keepalive = "0.5s"',
                'ssh_connect_timeout = "3s"',
                "",
                "[[nodes]]",
                'name = "local"',
                f'host = "{node.host}"',
                f"port = {node.port}",
                f"user = {_toml_str(node.user)}",
                f"identity = {_toml_str(str(node.identity))}",
                f"known_hosts = {_toml_str(str(node.known_hosts))}",
                f"home = {_toml_str(str(node.home))}",
                f"python = {_toml_str(sys.executable)}",
                "[nodes.env]",
                f"NVQ_FAKE_GPUS = {_toml_str(str(nvq.gpus_file))}",
                'NVQ_GPU_BACKEND = "fake"',
                f'NVQ_SAMPLE_INTERVAL = "{sample_interval}"',
                "",
            ]
        )
    )
    nvq.runner_home = Path(node.home)
