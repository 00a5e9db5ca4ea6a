"""The daemon in-process, minus its control socket: its state over a real `Store` on a
temporary path, one `run_link` per node driven by a `FakeRunner`, and the background
tasks that `nvq.daemon.main.serve` starts (placement, machines, notifier).

It wires the daemon the way `nvq.daemon.main.serve` does (State, Reassigner, Artifacts,
ArtifactSyncs, placement's Memory, RunnerEvents, Relays, Ops) and yields the `State`; submissions go through the real submit
handler, so a test sees what a CLI submit would do.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

from nvq import control as c
from nvq.config import load_config
from nvq.daemon.artifacts.artifact_syncs import ArtifactSyncs
from nvq.daemon.artifacts.artifacts import Artifacts
from nvq.daemon.artifacts.runner_messages import ArtifactMessages
from nvq.daemon.core.state import State
from nvq.daemon.handlers.context import Context
from nvq.daemon.handlers.submit import submit as submit_handler
from nvq.daemon.machines.contention_watch import ContentionWatch
from nvq.daemon.machines.link import run_link
from nvq.daemon.machines.reassign import Reassigner
from nvq.daemon.machines.runner_events import RunnerEvents
from nvq.daemon.ops import Ops
from nvq.daemon.placement.memory import Memory
from nvq.daemon.placement.placing import placement_loop
from nvq.daemon.sessions.relay import Relays
from nvq.home import Home
from nvq.model import Job, JobRecord, JobSpec
from nvq.store import Store
from tests.fakes.runner import FakeRunner

LOCAL_ONLY = ""
_contexts: dict[int, Context] = {}  # the default config: one local node named "local"


def nodes_config(*names: str, node_grace: str = "0.5s") -> str:
    """A config of SSH nodes (never dialled: fake runners stand in for them)."""
    lines = ["[queue]", "local_node = false", f'node_grace = "{node_grace}"',
             'lease = "off"', ""]
    for name in names:
        lines += ["[[nodes]]", f'name = "{name}"', f'host = "{name}.invalid"', ""]
    return "\n".join(lines)


@asynccontextmanager
async def running_daemon(
    home: Path, runners: dict[str, FakeRunner], config: str = LOCAL_ONLY
) -> AsyncIterator[State]:
    """A daemon on `home` whose nodes are the given fake runners (a node without a
    runner here is never connected). Its store stays on disk after it stops, so a
    second `running_daemon` on the same home is a daemon restart."""
    home.mkdir(parents=True, exist_ok=True)
    if config:
        (home / "config.toml").write_text(config)
    store = await Store.open(Home(home).db)
    loaded = load_config(home)
    ops = Ops(loaded, store, home)
    state = State(loaded, store, home, hooks=ops)
    artifacts = Artifacts(state)
    syncs = ArtifactSyncs(state, artifacts)
    contention = ContentionWatch(state)
    state.follow(syncs, None, contention)
    machines = Reassigner(state, syncs)
    memory = Memory()
    events = RunnerEvents(
        state, machines, ArtifactMessages(artifacts, syncs), Relays(state), contention
    )
    _contexts[id(state)] = Context(state, machines, ops, memory, artifacts, syncs)
    try:
        await state.load()
        await machines.load()
        async with anyio.create_task_group() as tg:
            tg.start_soon(placement_loop, state, memory, machines)
            tg.start_soon(syncs.run)
            tg.start_soon(machines.run)
            tg.start_soon(state.later.run)
            tg.start_soon(ops.notifier.run)
            for name, runner in runners.items():
                tg.start_soon(run_link, events, state.nodes[name], runner.open)
            state.kick()
            yield state
            tg.cancel_scope.cancel()
    finally:
        _contexts.pop(id(state), None)
        with anyio.CancelScope(shield=True):
            await store.close()


def memory_of(core: State) -> Memory:
    """Placement's memory of the daemon `running_daemon` yielded."""
    return _contexts[id(core)].memory


async def eventually(predicate: Callable[[], bool], timeout: float = 60) -> None:
    """Wait for daemon-side state that no frame announces (a job's state in memory).
    The deadline only stops a hung test: a loaded machine can take many seconds."""
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.01)


async def submit(core: State, command: str = "true", **spec: object) -> Job:
    request = c.Submit(spec=JobSpec(command=command, **spec))  # type: ignore[arg-type]
    return await submit_handler(_contexts[id(core)], request, "tester")


async def job_now(core: State, job_id: int) -> JobRecord:
    job = core.jobs.get(job_id) or await core.store.job(job_id)
    assert job is not None, f"no job {job_id}"
    return job


async def event_kinds(core: State, job_id: int) -> list[str]:
    return [e.kind for e in await core.store.events(job_id=job_id)]
