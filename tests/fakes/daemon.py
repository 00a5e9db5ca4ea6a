"""The daemon in-process, minus its control socket: its state over a real `Store` on a
temporary path, one `run_link` per node driven by a `FakeRunner`, and the background
tasks that `nvq.daemon.main.serve` starts (placement, machines, notifier).

What it needs from the daemon (today's API; the state split renames these):
  * `Core(config, store, home)`, `await core.load()`, `core.nodes[name]` (NodeRuntime),
    `core.jobs`, `core.reaps`, `core.kick()`, `core.placement_loop()`,
    `core.machines.run()`, `core.ops.notifier.run()`, `await core.submit(spec, user)`;
  * `nvq.daemon.link.run_link(core, node, opener)` with `opener() -> ByteChannel`;
  * `Store.open(path)`, `store.close()`, `store.job(id)`, `store.events(...)`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

from nvq.config import load_config
from nvq.daemon.core import Core
from nvq.daemon.link import run_link
from nvq.home import Home
from nvq.model import Job, JobSpec
from nvq.store import Store
from tests.fakes.runner import FakeRunner

LOCAL_ONLY = ""  # the default config: one local node named "local"


def nodes_config(*names: str, node_grace: str = "0.5s") -> str:
    """A config of SSH nodes (never dialled: fake runners stand in for them)."""
    lines = ["[queue]", "local_node = false", f'node_grace = "{node_grace}"', ""]
    for name in names:
        lines += ["[[nodes]]", f'name = "{name}"', f'host = "{name}.invalid"', ""]
    return "\n".join(lines)


@asynccontextmanager
async def running_daemon(
    home: Path, runners: dict[str, FakeRunner], config: str = LOCAL_ONLY
) -> AsyncIterator[Core]:
    """A daemon on `home` whose nodes are the given fake runners (a node without a
    runner here is never connected). Its store stays on disk after it stops, so a
    second `running_daemon` on the same home is a daemon restart."""
    home.mkdir(parents=True, exist_ok=True)
    if config:
        (home / "config.toml").write_text(config)
    store = await Store.open(Home(home).db)
    core = Core(load_config(home), store, home)
    try:
        await core.load()
        async with anyio.create_task_group() as tg:
            tg.start_soon(core.placement_loop)
            tg.start_soon(core.machines.run)
            tg.start_soon(core.ops.notifier.run)
            for name, runner in runners.items():
                tg.start_soon(run_link, core, core.nodes[name], runner.open)
            core.kick()
            yield core
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await store.close()


async def eventually(predicate: Callable[[], bool], timeout: float = 10) -> None:
    """Wait for daemon-side state that no frame announces (a job's state in memory)."""
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.01)


async def submit(core: Core, command: str = "true", **spec: object) -> Job:
    return await core.submit(JobSpec(command=command, **spec), user="tester")  # type: ignore[arg-type]


async def job_now(core: Core, job_id: int) -> Job:
    job = core.jobs.get(job_id) or await core.store.job(job_id)
    assert job is not None, f"no job {job_id}"
    return job


async def event_kinds(core: Core, job_id: int) -> list[str]:
    return [e.kind for e in await core.store.events(job_id=job_id)]
