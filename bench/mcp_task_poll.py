"""What an MCP task of `nvq mcp` costs its host's polls: `tasks/get` on a task that
waits for a running job, beside the CLI call each one makes (`nvq job wait ID --timeout
0 --json`), and the `job_wait` call that starts the task.

One `nvq mcp` over stdio, driven by the SDK's own client declaring the tasks extension
(2026-07-28); the CLI side is a fresh process per call. The host polls every
`pollIntervalMs` (5 s), so one task costs the queue host about p50 / 5000 of a core.
Round-robin, p50 and p99 in ms.

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

import anyio
from common import emit, machine, queue
from mcp import types
from mcp.client.extension import ClaimContext, ResultClaim
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_latency import nvq_argv, summary

TASKS = "io.modelcontextprotocol/tasks"


class TaskHandle(types.Result):
    result_type: Literal["task"] = "task"
    task_id: str


class TaskIdParams(types.RequestParams):
    task_id: str


class GetTask(types.Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams


class TaskState(types.Result):
    task_id: str
    status: str


async def unresolved(handle: TaskHandle, ctx: ClaimContext) -> types.CallToolResult:
    raise AssertionError("the bench takes the task itself (allow_claimed)")


async def measure(env: dict[str, str], cwd: str, job: int, runs: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"start": [], "tasks_get": [], "cli_wait_now": []}
    params = StdioServerParameters(
        command=nvq_argv()[0], args=[*nvq_argv()[1:], "mcp"], env=env, cwd=cwd
    )
    claim = ResultClaim(result_type="task", model=TaskHandle, resolve=unresolved)
    kw: dict[str, Any] = {"extensions": {TASKS: {}}, "result_claims": {TASKS: [claim]}}
    cli = [*nvq_argv(), "job", "wait", str(job), "--timeout", "0", "--json"]
    async with stdio_client(params) as (read, write), ClientSession(read, write, **kw) as s:
        await s.discover()
        for _ in range(runs):
            t = time.perf_counter()
            handle = await s.call_tool("job_wait", {"job_ids": [job]}, allow_claimed=True)
            times["start"].append((time.perf_counter() - t) * 1000)
            assert isinstance(handle, TaskHandle), handle
            t = time.perf_counter()
            state = await s.send_request(
                GetTask(params=TaskIdParams(task_id=handle.task_id)), TaskState
            )
            times["tasks_get"].append((time.perf_counter() - t) * 1000)
            assert state.status == "working", state
            t = time.perf_counter()
            # blocking on purpose: a plain process start, timed with nothing else running
            subprocess.run(cli, env=env, cwd=cwd, capture_output=True)  # noqa: ASYNC221
            times["cli_wait_now"].append((time.perf_counter() - t) * 1000)
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    opts = ap.parse_args()
    doc: dict[str, object] = {"bench": "mcp_task_poll", "machine": machine(), "runs": opts.runs}
    gate = Path(tempfile.mkdtemp(prefix="nvq-bench-gate-")) / "go"
    with queue("local") as nvq:
        argv = f"until [ -e {gate} ]; do sleep 0.2; done"
        job = nvq.submit("--gpus", "0", "--", "sh", "-c", argv)["id"]
        try:
            times = anyio.run(measure, nvq.env, str(nvq.cwd), job, opts.runs, backend="asyncio")
        finally:
            gate.touch()
    doc["ms"] = {name: summary(ms) for name, ms in times.items()}
    emit(doc)


if __name__ == "__main__":
    main()
