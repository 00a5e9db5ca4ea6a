"""MCP Tasks for `nvq mcp`'s waits: the `io.modelcontextprotocol/tasks` extension
(SEP-2663, MCP 2026-07-28). When a client declares the extension on its request,
`job_wait` and `job_submit` with `wait` answer at once with a task handle instead of
blocking; `tasks/get` reads the jobs as they stand (`nvq job wait --timeout 0`): the
task is `working` while they run, its status message each job's state, place and
progress line, and `completed` with the `job wait` document, as the tool's result,
when they have ended (a job that failed too: the document says so, exit_code 1).

The task is the wait itself, not something this process keeps: its id names the jobs
(`wait:12,13@<created ms>`, `wait:12@...+array7`), so any `nvq mcp` started later by
the same user answers for it, and every read runs with that user's rights, as
`job_wait` would. The id grants nothing: the daemon decides what the caller may see.
`tasks/cancel` is acknowledged and stops nothing; the job is the user's, and
`job_cancel` ends it (a host that cancels the task on shutdown leaves the job be)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

import msgspec
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import Context, require_client_extension
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    RequestParams,
    Result,
    TextContent,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from nvq.model import FINISHED_STATES

TASKS = "io.modelcontextprotocol/tasks"
POLL_MS = 5000  # a job's state changes in seconds at the soonest, mostly in minutes
TASK_META = "dev.nvq/task"  # a tool's result asks the interceptor to hand back a task

Status = Literal["working", "input_required", "completed", "failed", "cancelled"]


Wait = Callable[..., Awaitable[CallToolResult]]  # `nvq job wait ARGS --json` as a tool result


class TaskRef(msgspec.Struct, frozen=True):
    """What a task waits for: jobs and/or an array's members, since `created_ms`."""

    jobs: tuple[int, ...]
    array: int | None
    created_ms: int


_ID = re.compile(r"wait:(?P<jobs>\d+(?:,\d+)*)?(?:\+?array(?P<array>\d+))?@(?P<ms>\d+)")


def task_id(ref: TaskRef) -> str:
    jobs = ",".join(map(str, ref.jobs))
    array = "" if ref.array is None else ("+" if jobs else "") + f"array{ref.array}"
    return f"wait:{jobs}{array}@{ref.created_ms}"


def parse_task_id(text: str) -> TaskRef | None:
    """The wait a task id names; None: not one of ours."""
    m = _ID.fullmatch(text)
    if m is None or (m["jobs"] is None and m["array"] is None):
        return None
    jobs = tuple(int(j) for j in m["jobs"].split(",")) if m["jobs"] else ()
    array = int(m["array"]) if m["array"] is not None else None
    return TaskRef(jobs, array, int(m["ms"]))


def wait_args(ref: TaskRef) -> list[str]:
    """`nvq job wait`'s arguments for this wait."""
    array = [] if ref.array is None else ["--array", str(ref.array)]
    return [*map(str, ref.jobs), *array]


def job_line(job: dict[str, Any]) -> str:
    """`job 12 running on gpu1:0: epoch 3/10`: a job's state, where, and its progress."""
    line = f"job {job.get('id')} {job.get('state')}"
    gpus = job.get("gpus") or []
    if job.get("node"):
        line += f" on {job['node']}" + (":" + ",".join(map(str, gpus)) if gpus else "")
    if job.get("state") in FINISHED_STATES and job.get("exit_code") is not None:
        line += f" (exit {job['exit_code']})"
    if job.get("reason") and job.get("state") not in ("running", "completed"):
        line += f" ({job['reason']})"
    if job.get("progress"):
        line += f": {job['progress']}"
    return line


def wait_state(doc: dict[str, Any]) -> tuple[Status, str]:
    """A task's status from the `job wait` document as things stand: `working` while
    the wait would go on (exit 2), else `completed` (0: all completed, 1: one ended
    badly; the document, the task's result, says which)."""
    jobs = doc.get("jobs") or []
    message = "; ".join(job_line(j) for j in jobs) or "no jobs"
    return ("working" if doc.get("exit_code") == 2 else "completed"), message


def start_message(doc: dict[str, Any]) -> str:
    """The status message a task starts with, from the tool's own document."""
    if "jobs" in doc:
        return wait_state(doc)[1]
    if "ids" in doc:
        return f"array {doc.get('id')}: {doc.get('count', len(doc['ids']))} jobs submitted"
    return job_line(doc)


def last_update(ref: TaskRef, jobs: Sequence[dict[str, Any]]) -> float:
    """When the jobs last changed, as far as their times say (else the task's start)."""
    times = [ref.created_ms / 1000]
    for j in jobs:
        times += [t for k in ("created_at", "started_at", "ended_at") if (t := j.get(k))]
    return max(times)


def iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds")


def declared(ctx: Context[Any, Any] | None) -> bool:
    """Whether this request's client takes a task for an answer: it declared the
    extension, on a protocol revision that has it (never on 2025-11-25)."""
    if ctx is None:
        return False
    request = ctx.request_context
    caps = ctx.client_capabilities
    return (
        request.protocol_version in MODERN_PROTOCOL_VERSIONS
        and caps is not None
        and caps.extensions is not None
        and TASKS in caps.extensions
    )


def started(ref: TaskRef, result: CallToolResult) -> CallToolResult:
    """`result`, marked for the interceptor to answer with a task for `ref` instead."""
    return result.model_copy(update={"meta": {**(result.meta or {}), TASK_META: task_id(ref)}})


def new_ref(jobs: Sequence[int], array: int | None) -> TaskRef:
    return TaskRef(tuple(jobs), array, int(time.time() * 1000))


async def wait_task(wait: Wait, jobs: Sequence[int], array: int | None) -> CallToolResult:
    """`job_wait` as a task: checked as `job wait` would check it (an unknown job is
    refused now, not as a task), then handed to the interceptor."""
    ref = new_ref(jobs, array)
    return started(ref, await wait(*wait_args(ref), "--timeout", "0"))


async def after_submit(
    wait: Wait, queued: CallToolResult, asked: bool, ctx: Context[Any, Any] | None,
    bound: float,
) -> CallToolResult:
    """`job_submit`'s answer: with `wait` (`asked`), a task for the job (or array) just
    queued when the client takes one, else the `job wait` document within `bound`
    seconds, the submit's own lines after it."""
    if not asked:
        return queued
    doc = queued.structured_content or {}
    ref = new_ref([], doc["id"]) if "ids" in doc else new_ref([doc["id"]], None)
    if declared(ctx):
        return started(ref, queued)
    waited = await wait(*wait_args(ref), "--timeout", f"{bound:g}")
    return waited.model_copy(update={"content": [*waited.content, *queued.content[1:]]})


# ---------------------------------------------------------------- the wire (SEP-2663)


class TaskFields(Result):
    task_id: str
    status: Status
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None = None  # null: the task lasts as long as its jobs' records
    poll_interval_ms: int | None = POLL_MS

    @model_serializer(mode="wrap")
    def _ttl_always(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """`ttlMs` is required on the wire, null meaning unlimited; the SDK sends
        results without their None fields."""
        out: dict[str, Any] = handler(self)
        out.setdefault("ttlMs" if "taskId" in out else "ttl_ms", self.ttl_ms)
        return out


class CreateTaskResult(TaskFields):
    result_type: Literal["task"] = "task"


class GetTaskResult(TaskFields):
    """`tasks/get`'s answer: the task, with `result` once it completed."""

    result_type: Literal["complete"] = "complete"
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class Ack(Result):
    result_type: Literal["complete"] = "complete"


class TaskParams(RequestParams):
    task_id: str


class UpdateTaskParams(TaskParams):
    input_responses: dict[str, Any] = Field(default_factory=dict)


class WaitTasks(Extension):
    """The tasks extension over `wait`: `nvq job wait ARGS`'s document as a tool
    result (`nvq_json` bound to `job wait`)."""

    identifier = TASKS

    def __init__(self, wait: Wait) -> None:
        self._wait = wait

    def methods(self) -> Sequence[MethodBinding]:
        modern = frozenset(MODERN_PROTOCOL_VERSIONS)
        return [
            MethodBinding("tasks/get", TaskParams, self.get, protocol_versions=modern),
            MethodBinding("tasks/update", UpdateTaskParams, self.ack, protocol_versions=modern),
            MethodBinding("tasks/cancel", TaskParams, self.ack, protocol_versions=modern),
        ]

    async def intercept_tool_call(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any],
        call_next: CallNext,
    ) -> HandlerResult:
        result = await call_next(ctx)
        meta = result.meta if isinstance(result, CallToolResult) else None
        if not isinstance(result, CallToolResult) or not meta or TASK_META not in meta:
            return result
        ref = parse_task_id(meta[TASK_META])
        assert ref is not None
        said = [c.text for c in result.content[1:] if isinstance(c, TextContent)]
        message = "; ".join([start_message(result.structured_content or {}), *said])
        now = iso(ref.created_ms / 1000)
        return CreateTaskResult(
            task_id=task_id(ref), status="working", status_message=message,
            created_at=now, last_updated_at=now,
        )

    async def get(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> GetTaskResult:
        require_client_extension(ctx, TASKS)
        ref = known(params.task_id)
        try:
            result = await self._wait(*wait_args(ref), "--timeout", "0")
        except ToolError as exc:
            refused = refused_for_good(str(exc))
            if refused is None:  # the queue is down or restarting: the jobs are not over
                said = f"the queue does not answer now: {first_line(str(exc))}"
                return state(ref, "working", said, time.time())
            error = CallToolResult(content=[TextContent(type="text", text=str(exc))], is_error=True)
            return state(ref, "completed", refused, time.time(), error)
        doc = result.structured_content or {}
        status, message = wait_state(doc)
        ended = result if status == "completed" else None
        return state(ref, status, message, last_update(ref, doc.get("jobs") or []), ended)

    async def ack(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> Ack:
        """`tasks/update` (a wait never asks for input) and `tasks/cancel` (ends the
        watching, not the job): acknowledged for a task of ours."""
        require_client_extension(ctx, TASKS)
        known(params.task_id)
        return Ack()


def state(
    ref: TaskRef, status: Status, message: str, updated: float,
    result: CallToolResult | None = None,
) -> GetTaskResult:
    return GetTaskResult(
        task_id=task_id(ref), status=status, status_message=message,
        created_at=iso(ref.created_ms / 1000), last_updated_at=iso(updated),
        result=None if result is None else dump(result),
    )


def known(task: str) -> TaskRef:
    ref = parse_task_id(task)
    if ref is None:
        raise MCPError(code=INVALID_PARAMS, message=f"Failed to retrieve task: no task {task!r}")
    return ref


def refused_for_good(error: str) -> str | None:
    """The error line when the CLI refused the wait on its merits or for bad input (a
    job gone or not the caller's): the task is over. None: anything else, which a
    later read may not meet (the daemon restarting)."""
    try:
        doc = json.loads(error)
    except ValueError:
        return None
    if isinstance(doc, dict) and doc.get("exit_code") == 2:
        return str(doc.get("error"))
    return None


def first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "no answer"


def dump(result: CallToolResult) -> dict[str, Any]:
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)
