"""`nvq mcp`'s waits as MCP Tasks (the `io.modelcontextprotocol/tasks` extension of
MCP 2026-07-28), through the SDK's own `ClientSession` over stdio, on a real daemon
and sshd node: a wait answers at once with a task, `tasks/get` follows the job
(pending, then running, with its progress line) and completes with the `job wait`
document when it ends, failed jobs included; the task outlives the `nvq mcp` process
that made it; cancelling the task leaves the job running; a client without the
extension keeps the bounded wait; and an agent host that resolves tasks itself gets
the job's end as the tool's answer, the agent never polling."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest
from mcp import types
from mcp.client import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from nvq.agents.mcp_tasks import TaskRef, parse_task_id, task_id
from tests.cluster import Nvq
from tests.members import _workdir, nvq_command, reachable_nvq, second_user

TASKS = "io.modelcontextprotocol/tasks"


# The client's half of the extension, from SEP-2663 (the SDK ships none yet).
class TaskHandle(types.Result):
    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None  # required on the wire: null, the task lasts as long as its jobs
    poll_interval_ms: int | None = None


class TaskIdParams(types.RequestParams):
    task_id: str


class GetTask(types.Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams


class CancelTask(types.Request[TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskIdParams


class UpdateParams(TaskIdParams):
    input_responses: dict[str, Any]


class UpdateTask(types.Request[UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: UpdateParams


class TaskState(types.Result):
    task_id: str
    status: str
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


ENDED = ("completed", "failed", "cancelled")


async def get(s: ClientSession, task: str) -> TaskState:
    return await s.send_request(GetTask(params=TaskIdParams(task_id=task)), TaskState)


async def until(s: ClientSession, task: str, pred: Any) -> TaskState:
    """`tasks/get` until `pred(state)`: the job's state changes when the test lets it,
    so this waits for that, not for time (a hung test ends at the deadline)."""
    with anyio.fail_after(120):
        while True:
            state = await get(s, task)
            if pred(state):
                return state
            await anyio.sleep(0.1)


async def host_resolves(handle: TaskHandle, ctx: ClaimContext) -> types.CallToolResult:
    """An agent host's part: follow the task until it ends and hand the model the
    tool's result, as if the call had blocked (it polls faster than the server's
    suggested interval to keep the test short)."""
    state = await until(ctx.session, handle.task_id, lambda t: t.status in ENDED)
    assert state.status == "completed", state
    return types.CallToolResult.model_validate(state.result)


def nvq_mcp(nvq: Nvq) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "nvq", "mcp"], env=nvq.env, cwd=str(nvq.cwd))


@asynccontextmanager
async def session(
    nvq: Nvq, *, tasks: bool, modern: bool = True, params: StdioServerParameters | None = None
) -> AsyncIterator[ClientSession]:
    params = params or nvq_mcp(nvq)
    kw: dict[str, Any] = {}
    if tasks:
        claim = ResultClaim(result_type="task", model=TaskHandle, resolve=host_resolves)
        kw = {"extensions": {TASKS: {}}, "result_claims": {TASKS: [claim]}}
    async with stdio_client(params) as (read, write), ClientSession(read, write, **kw) as s:
        if modern:
            found = await s.discover()
            assert found.capabilities.extensions == {TASKS: {}}
        else:
            await s.initialize()
        yield s


async def start(s: ClientSession, tool: str, **arguments: Any) -> TaskHandle:
    """Call `tool` and take the task it answers with (not resolved by the host)."""
    handle = await s.call_tool(tool, arguments, allow_claimed=True)
    assert isinstance(handle, TaskHandle), handle
    assert handle.status == "working" and handle.poll_interval_ms
    return handle


def blocked_on(gate: Path, then: str = "true") -> list[str]:
    return ["sh", "-c", f"until [ -e {gate} ]; do sleep 0.1; done; {then}"]


def doc(result: dict[str, Any]) -> Any:
    call = types.CallToolResult.model_validate(result)
    text = json.loads(call.content[0].text)  # type: ignore[union-attr]
    assert call.structured_content == text
    return text


def test_a_task_id_names_its_wait() -> None:
    for ref in (TaskRef((12,), None, 1), TaskRef((12, 13), 7, 2), TaskRef((), 7, 3)):
        assert parse_task_id(task_id(ref)) == ref
    for junk in ("", "wait:@1", "wait:12", "wait:12@", "x wait:12@1", "wait:a@1"):
        assert parse_task_id(junk) is None, junk


@pytest.fixture
def up(nvq: Nvq) -> Nvq:
    nvq.nodes_up()
    return nvq


def test_a_wait_is_a_task_that_follows_the_job(up: Nvq, tmp_path: Path) -> None:
    anyio.run(_follows, up, tmp_path, backend="asyncio")


async def _follows(nvq: Nvq, tmp: Path) -> None:
    first, ready, done = tmp / "first", tmp / "ready", tmp / "done"
    ahead = nvq.submit("--gpus", "0", "--", *blocked_on(first))
    progress = f'echo "epoch 3/10" > "$NVQ_STATUS_FILE"; touch {ready}'
    result = 'echo "{\\"loss\\": 0.5}" > "$NVQ_JOB_DIR/result.json"'
    async with session(nvq, tasks=True) as s:
        handle = await start(
            s, "job_submit", command=["sh", "-c", f"{progress}; until [ -e {done} ]; "
                                      f"do sleep 0.1; done; {result}"],
            gpus=0, after=str(ahead["id"]), wait=True)
        job = int(handle.task_id.split(":")[1].split("@")[0])
        assert f"job {job} pending" in (handle.status_message or "")
        state = await get(s, handle.task_id)
        assert state.status == "working" and f"job {job} pending" in (state.status_message or "")

        first.touch()  # the job ahead ends; ours starts and says how far it is
        state = await until(s, handle.task_id, lambda t: "running" in (t.status_message or ""))
        assert state.status == "working" and state.result is None
        state = await until(s, handle.task_id, lambda t: "epoch 3/10" in (t.status_message or ""))
        assert f"job {job} running on " in (state.status_message or "")
        assert ready.exists()

        done.touch()
        state = await until(s, handle.task_id, lambda t: t.status in ENDED)
        assert state.status == "completed"
        waited = doc(state.result or {})
        assert waited["exit_code"] == 0 and waited["jobs"][0]["id"] == job
        assert waited["jobs"][0]["state"] == "completed"
        assert waited["jobs"][0]["result"] == {"loss": 0.5}
        assert waited.keys() == nvq.json("job", "wait", str(job)).keys()  # the CLI's document

        # a job that fails: the task completes, with the document that says so
        bad = nvq.submit("--gpus", "0", "--", "false")
        failed = await start(s, "job_wait", job_ids=[bad["id"]])
        state = await until(s, failed.task_id, lambda t: t.status in ENDED)
        assert state.status == "completed" and "failed" in (state.status_message or "")
        ended = doc(state.result or {})
        assert ended["exit_code"] == 1 and ended["jobs"][0]["state"] == "failed"

        # an array: the task is the wait on every member
        sweep = await start(s, "job_submit", command=["echo", "{}"], gpus=0, array="0-1", wait=True)
        assert "+array" not in sweep.task_id and "array" in sweep.task_id
        state = await until(s, sweep.task_id, lambda t: t.status in ENDED)
        swept = doc(state.result or {})
        assert swept["exit_code"] == 0 and [j["array_index"] for j in swept["jobs"]] == [0, 1]

        # no such task; and a wait on no job is refused as job_wait refuses it
        with pytest.raises(MCPError) as unknown:
            await get(s, "wait:nothing")
        assert unknown.value.error.code == types.INVALID_PARAMS
        refused = await s.call_tool("job_wait", {"job_ids": [999]}, allow_claimed=True)
        assert isinstance(refused, types.CallToolResult) and refused.is_error, refused
        assert '"exit_code": 2' in refused.content[0].text  # type: ignore[union-attr]

        # a task whose job was purged since: it ends, with the error job_wait would give
        nvq.ok("job", "purge", "--yes")
        state = await get(s, failed.task_id)
        assert state.status == "completed" and f"no job with id {bad['id']}" in (
            state.status_message or "")
        gone = types.CallToolResult.model_validate(state.result)
        assert gone.is_error and '"exit_code": 2' in gone.content[0].text  # type: ignore[union-attr]


def test_a_task_outlives_its_server_and_the_daemon_and_cancelling_it_leaves_the_job(
    up: Nvq, tmp_path: Path
) -> None:
    anyio.run(_outlives, up, tmp_path, backend="asyncio")


async def _outlives(nvq: Nvq, tmp: Path) -> None:
    go, stay = tmp / "go", tmp / "stay"
    job = nvq.submit("--gpus", "0", "--", *blocked_on(go))
    kept = nvq.submit("--gpus", "0", "--", *blocked_on(stay))
    nvq.wait_for(kept["id"], lambda j: j["state"] == "running")
    async with session(nvq, tasks=True) as s:
        handle = await start(s, "job_wait", job_ids=[job["id"]])
        cancelled = await start(s, "job_wait", job_ids=[kept["id"]])
        await s.send_request(
            CancelTask(params=TaskIdParams(task_id=cancelled.task_id)), types.EmptyResult)
        # a wait never asks for input: an update is acknowledged and changes nothing
        await s.send_request(UpdateTask(params=UpdateParams(
            task_id=handle.task_id, input_responses={"x": {}})), types.EmptyResult)
        with pytest.raises(MCPError) as unknown:
            await s.send_request(
                CancelTask(params=TaskIdParams(task_id="wait:@1")), types.EmptyResult)
        assert unknown.value.error.code == types.INVALID_PARAMS
    # that `nvq mcp` is gone; the host kept the ids and asks a new one, while the
    # daemon is down too: the task goes on (it never starts a daemon stopped on purpose)
    nvq.ok("daemon", "stop")
    async with session(nvq, tasks=True) as s:
        state = await get(s, handle.task_id)
        assert state.status == "working", state
        assert "the queue does not answer now" in (state.status_message or "")
        nvq.ok("daemon", "start")
        go.touch()
        state = await until(s, handle.task_id, lambda t: t.status in ENDED)
        assert state.status == "completed" and doc(state.result or {})["exit_code"] == 0
        # cancelling the task stopped the watching, not the job
        assert nvq.show(kept["id"])["state"] == "running"
        state = await get(s, cancelled.task_id)
        assert state.status == "working" and "running" in (state.status_message or "")
        stay.touch()
        state = await until(s, cancelled.task_id, lambda t: t.status in ENDED)
        assert doc(state.result or {})["jobs"][0]["state"] == "completed"


def test_clients_without_tasks_keep_the_bounded_wait(up: Nvq) -> None:
    anyio.run(_without, up, backend="asyncio")


async def _without(nvq: Nvq) -> None:
    for modern in (False, True):  # the 2025-11-25 handshake; 2026 without the extension
        async with session(nvq, tasks=False, modern=modern) as s:
            answer = await s.call_tool("job_submit", {"command": ["true"], "gpus": 0, "wait": True})
            assert not answer.is_error, answer
            waited = json.loads(answer.content[0].text)  # type: ignore[union-attr]
            assert answer.structured_content == waited
            assert waited["exit_code"] == 0 and waited["jobs"][0]["state"] == "completed"
            assert answer.content[1].text.startswith("snapshot of ")  # type: ignore[union-attr]
            job = waited["jobs"][0]["id"]
            again = await s.call_tool("job_wait", {"job_ids": [job], "timeout_seconds": 60})
            assert json.loads(again.content[0].text)["exit_code"] == 0  # type: ignore[union-attr]
            # tasks/*: no such method on 2025-11-25; refused to a 2026 client without it
            with pytest.raises(MCPError) as missing:
                await get(s, f"wait:{job}@0")
            assert missing.value.error.code == (
                types.MISSING_REQUIRED_CLIENT_CAPABILITY if modern else types.METHOD_NOT_FOUND)


def running(nvq: Nvq) -> dict[str, Any]:
    """The one job, once it runs (the agent's call submits it meanwhile)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        jobs = nvq.json("job", "ls")["jobs"]
        if jobs and jobs[0]["state"] == "running":
            return jobs[0]  # type: ignore[no-any-return]
        time.sleep(0.1)
    raise AssertionError("the agent's job never ran")


def test_an_agent_is_told_when_its_job_ends(up: Nvq, tmp_path: Path) -> None:
    """The agent story: following `nvq skill`, the agent submits with wait and ends
    its turn; its host follows the task and wakes it with the job's end, the
    `job wait` document, without the agent calling anything in between."""
    anyio.run(_told, up, tmp_path, backend="asyncio")


class AgentHost(ClientExtension):
    """An agent host with MCP Tasks: it takes the task a call answers with and
    follows it, so the call returns when the job ends."""

    identifier = TASKS

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=TaskHandle, resolve=host_resolves)]


async def _told(nvq: Nvq, tmp: Path) -> None:
    go = tmp / "go"
    async with Client(nvq_mcp(nvq), extensions=[AgentHost()]) as host:
        told: list[types.CallToolResult] = []
        async with anyio.create_task_group() as turn:

            async def agent_call() -> None:  # the agent's turn ends here; the host waits
                told.append(await host.call_tool(
                    "job_submit", {"command": blocked_on(go, "exit 3"), "gpus": 0,
                                   "note": "told, not polling", "wait": True}))

            turn.start_soon(agent_call)
            job = await anyio.to_thread.run_sync(running, nvq)
            assert job["note"] == "told, not polling" and not told
            go.touch()
        (answer,) = told
        assert not answer.is_error  # the call succeeded; the job did not
        ended = json.loads(answer.content[0].text)  # type: ignore[union-attr]
        assert ended["exit_code"] == 1 and ended["jobs"][0]["exit_code"] == 3


def test_a_members_task_reads_with_the_members_rights() -> None:
    """A member's `nvq mcp` (run as the member) follows the owner's job, whose
    metadata every member may read, but its result comes back as `job wait` gives it
    to that member: without the output (members_read = "metadata")."""
    with second_user() as (user, group), reachable_nvq() as nvq:
        line = nvq_command(user)
        if line is None:
            pytest.skip(f"{user} cannot run this checkout's Python")
        nvq.write_config(f'[queue]\nmembers_group = "{group}"\n')
        nvq.nodes_up()
        result = 'echo "{\\"loss\\": 0.5}" > "$NVQ_JOB_DIR/result.json"'
        theirs = nvq.submit("--gpus", "0", "--", "sh", "-c", result)
        assert nvq.wait(theirs["id"])[0] == 0
        assert nvq.show(theirs["id"])["result"] == {"loss": 0.5}
        member = StdioServerParameters(
            command="runuser", args=["-u", user, "--", "sh", "-c", f"exec {line} mcp"],
            env=nvq.env, cwd=_workdir(user))
        anyio.run(_members_task, nvq, member, theirs["id"], backend="asyncio")


async def _members_task(nvq: Nvq, member: StdioServerParameters, job: int) -> None:
    async with session(nvq, tasks=True, params=member) as s:
        handle = await start(s, "job_wait", job_ids=[job])
        state = await until(s, handle.task_id, lambda t: t.status in ENDED)
        (seen,) = doc(state.result or {})["jobs"]
        assert seen["id"] == job and seen["state"] == "completed"
        assert seen["result"] is None, seen
