"""An MCP tool call's latency beside the CLI's, against a running daemon on the local
node: `queue_status` beside `nvq queue status --json`, and `job_submit` (a CPU job,
`true`) beside `nvq job submit --gpus 0 --json -- true`.

The MCP side is one `nvq mcp` server over stdio, driven by the SDK's own client; a call
is timed from `call_tool` to its result. The CLI side is a fresh process per call, as
an agent's shell tool runs it. Round-robin, p50 and p99 in ms.

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import anyio
from common import emit, machine, queue
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def nvq_argv() -> list[str]:
    script = Path(sys.executable).with_name("nvq")
    return [str(script)] if script.exists() else [sys.executable, "-m", "nvq"]


def summary(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return {"p50": round(statistics.median(ordered), 1), "p99": round(p99, 1)}


async def measure(env: dict[str, str], cwd: str, runs: int) -> dict[str, list[float]]:
    cli = {
        "status": [*nvq_argv(), "queue", "status", "--json"],
        "submit": [*nvq_argv(), "job", "submit", "--gpus", "0", "--json", "--", "true"],
    }
    tools = {"status": ("queue_status", {}), "submit": ("job_submit", {"command": ["true"], "gpus": 0})}
    times: dict[str, list[float]] = {f"{side}_{k}": [] for side in ("mcp", "cli") for k in cli}
    params = StdioServerParameters(command=nvq_argv()[0], args=[*nvq_argv()[1:], "mcp"], env=env, cwd=cwd)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for name, args in tools.values():  # warm-up: page cache, the daemon's first answers
            await session.call_tool(name, args)
        for _ in range(runs):
            for key, argv in cli.items():
                t = time.perf_counter()
                # blocking on purpose: a plain process start, timed with nothing else
                # running (the MCP session is idle between its calls)
                subprocess.run(argv, env=env, cwd=cwd, capture_output=True, check=True)  # noqa: ASYNC221
                times[f"cli_{key}"].append((time.perf_counter() - t) * 1000)
                name, args = tools[key]
                t = time.perf_counter()
                result = await session.call_tool(name, args)
                times[f"mcp_{key}"].append((time.perf_counter() - t) * 1000)
                assert not result.is_error, result.content
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    opts = ap.parse_args()
    doc: dict[str, object] = {"bench": "mcp_latency", "machine": machine(), "runs": opts.runs}
    with queue("local") as nvq:
        times = anyio.run(measure, nvq.env, str(nvq.cwd), opts.runs, backend="asyncio")
    doc["ms"] = {name: summary(ms) for name, ms in times.items()}
    emit(doc)


if __name__ == "__main__":
    main()
