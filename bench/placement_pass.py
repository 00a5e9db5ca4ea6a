"""Placement in process: the daemon's placing layer (`place_once`: which jobs may start,
what the nodes hold, the pure decision with its reservation, the commit of the
dispatches) over a real store, on nodes that report cards but run nothing (no links).

Two cases, each printing its figures in ONE JSON line:

* `exit`: 100,000 identical pending jobs (`--pending`) on one node with two cards that
  each hold one job: a job ends (its completion committed), then one pass starts the
  next. `decision_ms` is the pass up to its decision (what `queue status` shows as
  `last_pass_ms`), `pass_ms` the whole `place_once` with the commit of the dispatch.
* `shapes`: 10,000 pending jobs of 100 shapes (`--pending`, `--shapes`) on 64 nodes of
  8 cards that foreign work fills, so nothing fits and every pass is a full one.

`--accounts N` spreads the jobs over N submitting users (default 1): with more than
one, fair share orders each pass by the accounts' usage (`fair_share = true`, the
default); `--no-fair-share` turns it off.

`--reserved` adds a reservation of one card of the first node, an hour from now: every
(untimed) job must then keep off that card, so each takes placement's card-by-card path.

    cd bench && ../.venv/bin/python placement_pass.py exit
    cd bench && ../.venv/bin/python placement_pass.py shapes
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import msgspec
from common import emit, machine, summary_ms

from nvq.config import load_config
from nvq.daemon.artifacts.artifact_syncs import ArtifactSyncs
from nvq.daemon.artifacts.artifacts import Artifacts
from nvq.daemon.core.held import locked
from nvq.daemon.core.state import State
from nvq.daemon.machines.reassign import Reassigner
from nvq.daemon.ops import Ops
from nvq.daemon.placement.memory import Memory
from nvq.daemon.placement.placing import place_once
from nvq.domain import request, transitions
from nvq.domain.reservations import CardReservation
from nvq.home import Home
from nvq.model import JobRecord, JobSpec, JobState, Tx
from nvq.store import Store
from nvq_runner import protocol as p

CARD_MB = 81920


async def daemon(
    home: Path,
    nodes: int,
    cards: int,
    foreign_mb: int,
    fair_share: bool = True,
    reserved: bool = False,
) -> tuple[State, Memory, Reassigner]:
    lines = ["[queue]", "local_node = false", 'headroom = "0"']
    lines += [f"fair_share = {'true' if fair_share else 'false'}", ""]
    for n in range(nodes):
        lines += ["[[nodes]]", f'name = "n{n:03d}"', f'host = "n{n:03d}.invalid"', ""]
    (home / "config.toml").write_text("\n".join(lines))
    store = await Store.open(Home(home).db)
    config = load_config(home)
    state = State(config, store, home, hooks=Ops(config, store, home))
    syncs = ArtifactSyncs(state, Artifacts(state))
    state.follow(syncs)
    machines = Reassigner(state, syncs)
    await state.load()
    await machines.load()
    if reserved:
        now = time.time()
        booked = CardReservation(name="bench", cards=["n000:0"], start=now + 3600, end=now + 7200)
        state.reservations = {"bench": booked}
    gpus = [
        p.GpuInfo(index=i, name="Bench", uuid=f"GPU-{i}", total_mb=CARD_MB) for i in range(cards)
    ]
    procs = [p.GpuProcess(pid=4000, user="someone", used_mb=foreign_mb)] if foreign_mb else []
    sample_gpus = [
        p.GpuSample(index=i, total_mb=CARD_MB, used_mb=foreign_mb, util_percent=0, processes=procs)
        for i in range(cards)
    ]
    for node in state.nodes.values():
        node.hello = p.Hello(
            hostname=node.name,
            runner_version="bench",
            protocol=1,
            backend="fake",
            cuda="13.0",
            driver=None,
            mem_total_mb=1 << 20,
            cpus=64,
            gpus=gpus,
            active=[],
            journal_head=0,
            boot_id="b",
            pid=1,
        )
        node.sample = p.Sample(time=time.time(), gpus=sample_gpus, mem_free_mb=1 << 20, progress={})
        node.state = "up"
        node.reconciled = True
        node.send = lambda _msg: True
    return state, Memory(), machines


async def submit(state: State, specs: list[JobSpec], copies: int, accounts: int = 1) -> None:
    now = time.time()
    jobs: list[JobRecord] = []
    for spec in specs:
        for n in range(copies):
            user = "bench" if accounts == 1 else f"user{n % accounts}"
            template = transitions.new_job(spec, user=user, now=now)
            jobs.append(request.asking(template, env={}))
    async with locked(state) as held:
        for start in range(0, len(jobs), 20_000):
            await held.commit(Tx(new_jobs=jobs[start : start + 20_000]))


async def exit_case(args: argparse.Namespace, home: Path) -> dict[str, Any]:
    state, memory, machines = await daemon(
        home, nodes=1, cards=3 if args.reserved else 2, foreign_mb=0,
        fair_share=args.fair_share, reserved=args.reserved,
    )
    spec = JobSpec(command="true", gpus=1, vram_mb=CARD_MB)
    await submit(state, [spec], args.pending, args.accounts)
    await place_once(state, memory, machines)  # fills both cards
    decision: list[float] = []
    whole: list[float] = []
    for _ in range(args.exits):
        running = next(j for j in state.jobs.values() if j.state is JobState.RUNNING)
        ended = msgspec.structs.replace(running, state=JobState.COMPLETED, ended_at=time.time())
        async with locked(state) as held:
            await held.commit(Tx(jobs=[ended]))
        t0 = time.perf_counter()
        await place_once(state, memory, machines)
        whole.append((time.perf_counter() - t0) * 1000)
        decision.append(float(memory.placement_stats["last_pass_ms"]))
        assert memory.placement_stats["placed"] == 1
    await state.store.close()
    return {
        "case": "exit with identical jobs pending",
        "pending": args.pending,
        "exits": args.exits,
        "accounts": args.accounts,
        "fair_share": args.fair_share,
        "reserved": args.reserved,
        "decision_ms": summary_ms([d / 1000 for d in decision]),
        "pass_ms": summary_ms([w / 1000 for w in whole]),
    }


async def shapes_case(args: argparse.Namespace, home: Path) -> dict[str, Any]:
    state, memory, machines = await daemon(
        home,
        nodes=64,
        cards=8,
        foreign_mb=CARD_MB - 1024,
        fair_share=args.fair_share,
        reserved=args.reserved,
    )
    specs = [
        JobSpec(command="true", gpus=1 + s % 4, vram_mb=2048 + 512 * s) for s in range(args.shapes)
    ]
    await submit(state, specs, args.pending // args.shapes, args.accounts)
    passes: list[float] = []
    for _ in range(args.passes):
        t0 = time.perf_counter()
        await place_once(state, memory, machines)
        passes.append((time.perf_counter() - t0) * 1000)
        assert memory.placement_stats["placed"] == 0
    await state.store.close()
    return {
        "case": "full pass, nothing fits",
        "pending": args.pending,
        "shapes": args.shapes,
        "nodes": 64,
        "accounts": args.accounts,
        "fair_share": args.fair_share,
        "reserved": args.reserved,
        "pass_ms": summary_ms([t / 1000 for t in passes]),
        "considered": memory.placement_stats.get("considered", args.pending),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["exit", "shapes"])
    ap.add_argument("--pending", type=int)
    ap.add_argument("--exits", type=int, default=200)
    ap.add_argument("--shapes", type=int, default=100)
    ap.add_argument("--passes", type=int, default=30)
    ap.add_argument("--accounts", type=int, default=1)
    ap.add_argument("--no-fair-share", dest="fair_share", action="store_false")
    ap.add_argument("--reserved", action="store_true")
    args = ap.parse_args()
    if args.pending is None:
        args.pending = 100_000 if args.case == "exit" else 10_000
    run = exit_case if args.case == "exit" else shapes_case
    with tempfile.TemporaryDirectory(prefix="nvq-bench-") as tmp:
        doc = anyio.run(run, args, Path(tmp))
    emit({"bench": f"placement_{args.case}", "machine": machine(), **doc})


if __name__ == "__main__":
    main()
