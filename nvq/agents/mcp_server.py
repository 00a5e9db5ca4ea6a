"""`nvq mcp`: nvq as a Model Context Protocol server over stdio, on the official SDK.

Each tool runs the `nvq` command line with `--json` and returns its document as is,
as text and as `structuredContent`, its tool's `outputSchema` being that command's
`nvq schema`: the same document, the same checks, the same exit status rules as the
CLI, and the caller's rights (the CLI talks to the daemon's socket as the OS user who
started this server; with `[remote]` it forwards to the queue host). A document with
`error` comes back as a tool error, and so do arguments a tool does not take or of the
wrong type, in one line naming the argument, before anything runs. `job_submit`
snapshots the directory the client names (`directory`), else the client's first root
when it offers roots, else this server's own directory, and says which it took. Tools
are kept apart by what they do, with MCP's annotations:
read-only ones (status, lists, a job, why, logs, results, alerts, events, `wait`), a
preview (`job_submit_dry_run`), and the ones that change the queue.

One process per call costs ~30 ms for the commonest reads (the CLI's fast path) and
a typer start for the rest (bench/mcp_latency.py); in exchange the server holds no
state and cannot answer differently from the CLI."""

from __future__ import annotations

import functools
import json
import os
import sys
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import anyio
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations

import nvq
from nvq.agents import mcp_tasks, skill
from nvq.agents.mcp_contract import NvqServer, refusal
from nvq.cli.fast import READS
from nvq.client.stop_mark import OBSERVE_ENV

READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
ADDS = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
SETS = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
ENDS = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)
WAIT_MAX = 600.0  # a call that is not a task must come back: a wait lasts at most this
INSTRUCTIONS = (
    "nvq is the user's GPU job queue. Submit GPU work, long work and work that must "
    "outlive this session with job_submit (give vram honestly and a note), instead of "
    "starting it by hand. Give job_submit wait: true to be told when the job ends: "
    "with MCP Tasks your client follows it however long, else job_wait again. "
    "Every tool returns the document `nvq ... --json` prints. "
    "Do not acknowledge alerts the user has not seen; confirm before cancelling a job "
    "you did not submit. The full guide: `nvq skill`."
)




async def nvq_json(*args: str, cwd: Path | None = None, said: str = "") -> CallToolResult:
    """`nvq ARGS --json`'s document, as text and as structured content (run in `cwd`;
    `said`: a line to add); a tool error when it is an error document."""
    head, sep, tail = _split(list(args))
    # A read runs with NVQ_OBSERVE=1: it starts no daemon stopped on purpose
    # (nvq.client.stop_mark).
    env = {**os.environ, OBSERVE_ENV: "1"} if tuple(head[:2]) in READS else None
    done = await anyio.run_process(
        [sys.executable, "-m", "nvq", *head, "--json", *sep, *tail],
        check=False,
        cwd=cwd,
        env=env,
    )
    out = done.stdout.decode(errors="replace").strip()
    try:
        doc = json.loads(out) if out else None
    except ValueError:
        doc = None
    if doc is None:
        err = done.stderr.decode(errors="replace").strip()
        raise ToolError(err or f"nvq {' '.join(args)} exited {done.returncode}")
    if isinstance(doc, dict) and "error" in doc:
        raise ToolError(out)
    content: list[Any] = [TextContent(type="text", text=out)]
    if said:
        content.append(TextContent(type="text", text=said))
    return CallToolResult(content=content, structured_content=doc)


wait_doc = functools.partial(nvq_json, "job", "wait")  # `job wait ARGS`'s document


def _split(args: list[str]) -> tuple[list[str], list[str], list[str]]:
    if "--" in args:
        i = args.index("--")
        return args[:i], ["--"], args[i + 1 :]
    return args, [], []


def _opt(flag: str, value: Any) -> list[str]:
    """`--flag VALUE`, `--flag` for True, nothing for None/False/empty."""
    if value is None or value is False or value == [] or value == "":
        return []
    if value is True:
        return [flag]
    if isinstance(value, list):
        return [x for v in value for x in (flag, str(v))]
    return [flag, str(value)]


def _ids(ids: list[int]) -> list[str]:
    return [str(i) for i in ids]


def build() -> NvqServer:
    server = NvqServer(
        "nvq", version=nvq.__version__, instructions=INSTRUCTIONS, log_level="WARNING",
        extensions=[mcp_tasks.WaitTasks(wait_doc)])
    tool = server.tool

    # ---------------------------------------------------------------- read-only

    @tool(annotations=READ, structured_output=False)
    async def queue_status() -> CallToolResult:
        """Nodes, GPUs, job counts, active jobs and open alerts (`nvq queue status`)."""
        return await nvq_json("queue", "status")

    @tool(annotations=READ, structured_output=False)
    async def queue_nodes(include_ignored: bool = False) -> CallToolResult:
        """Every GPU of every node: memory, utilisation and every process on it, the
        queue's or not. Read this before saying a card is free."""
        return await nvq_json("queue", "nodes", *_opt("--include-ignored", include_ignored))

    @tool(annotations=READ, structured_output=False)
    async def queue_lanes() -> CallToolResult:
        """Every GPU's lane: the job it runs, what is next, paused or blocked (and why)."""
        return await nvq_json("queue", "lanes")

    @tool(annotations=READ, structured_output=False)
    async def queue_lane(lane: str) -> CallToolResult:
        """One lane (NODE:GPU, node by prefix): its queue in running order."""
        return await nvq_json("queue", "lane", lane)

    @tool(annotations=READ, structured_output=False)
    async def job_list(
        active: bool = False,
        held: bool = False,
        state: list[str] | None = None,
        limit: int | None = None,
        array: int | None = None,
        every: bool = False,
        since: str | None = None,
        user: str | None = None,
        tag: str | None = None,
    ) -> CallToolResult:
        """Jobs: the live ones and the newest 50 finished, as {"jobs": [...], "more":
        bool}. active: live jobs only (pending, held, paused, running); held; state (repeatable); limit: the
        newest N; every: all of them; since: a job id, a date or an age (2h)."""
        args = [
            *_opt("--active", active), *_opt("--held", held), *_opt("--state", state or []),
            *_opt("--limit", limit), *_opt("--array", array), *_opt("--all", every),
            *_opt("--since", since), *_opt("--user", user), *_opt("--tag", tag),
        ]
        return await nvq_json("job", "ls", *args)

    @tool(annotations=READ, structured_output=False)
    async def job_show(job_id: int) -> CallToolResult:
        """One job in full: request, attempts, events, reason, the tail of its output.
        Diagnose a failure from this first."""
        return await nvq_json("job", "show", str(job_id))

    @tool(annotations=READ, structured_output=False)
    async def job_why(job_id: int) -> CallToolResult:
        """Why a job waits, node by node, each constraint checked with its numbers."""
        return await nvq_json("job", "why", str(job_id))

    @tool(annotations=READ, structured_output=False)
    async def job_logs(
        job_id: int, lines: int = 100, stderr: bool = False, attempt: int | None = None
    ) -> CallToolResult:
        """The last lines of a job's stdout (or stderr)."""
        args = ["-n", str(lines), *_opt("--stderr", stderr), *_opt("--attempt", attempt)]
        return await nvq_json("job", "logs", str(job_id), *args)

    @tool(annotations=READ, structured_output=False)
    async def job_result(job_id: int | None = None, array: int | None = None) -> CallToolResult:
        """A job's result.json payload; with array, every member's index, state and
        result (a sweep's table)."""
        if array is not None:
            return await nvq_json("job", "result", "--array", str(array))
        if job_id is None:
            raise refusal("give job_id or array")
        return await nvq_json("job", "result", str(job_id))

    @tool(annotations=READ, structured_output=False)
    async def queue_alerts(include_acknowledged: bool = False) -> CallToolResult:
        """What needs attention: failures, lost jobs, nodes down."""
        return await nvq_json("queue", "alerts", *_opt("--all", include_acknowledged))

    @tool(annotations=READ, structured_output=False)
    async def queue_events(since: int = 0, limit: int | None = None, job: int | None = None) -> CallToolResult:
        """The event log after event id `since`: what happened while you were away."""
        args = ["--since", str(since), *_opt("--limit", limit), *_opt("--job", job)]
        return await nvq_json("queue", "events", *args)

    @tool(annotations=READ, structured_output=False)
    async def job_wait(
        job_ids: list[int] | None = None, array: int | None = None, timeout_seconds: float = 60,
        ctx: Context[Any, Any] | None = None,
    ) -> CallToolResult:
        """Wait until the jobs end, at most timeout_seconds (up to 600), or as an MCP
        task that ends when they do. The `job wait` document: exit_code 0 all
        completed, 1 one ended badly (still_going lists those still running), 2 the
        timeout ran out first (not a failure: wait again)."""
        if mcp_tasks.declared(ctx):
            return await mcp_tasks.wait_task(wait_doc, job_ids or [], array)
        timeout = max(1.0, min(float(timeout_seconds), WAIT_MAX))
        return await wait_doc(*_ids(job_ids or []), *_opt("--array", array),
                              "--timeout", f"{timeout:g}")

    @tool(annotations=READ, structured_output=False)
    async def nvq_skill() -> CallToolResult:
        """nvq's guide for agents (Markdown): when to submit, how, and what to avoid."""
        text = skill.text()
        return CallToolResult(content=[TextContent(type="text", text=text)],
                              structured_content={"text": text})

    # ---------------------------------------------------------------- submit

    async def submit(
        dry_run: bool, command: list[str], options: dict[str, Any], cwd: Path | None = None,
        said: str = "",
    ) -> CallToolResult:
        flags = [x for name, value in options.items() for x in _opt(f"--{name}", value)]
        if dry_run:
            flags.append("--dry-run")
        return await nvq_json("job", "submit", *flags, "--", *command, cwd=cwd, said=said)

    @tool(annotations=READ, structured_output=False)
    async def job_submit_dry_run(
        command: list[str],
        vram: str | None = None,
        gpus: int = 1,
        node: str | None = None,
        lane: str | None = None,
        after: str | None = None,
        memory: str | None = None,
        array: str | None = None,
    ) -> CallToolResult:
        """Check a job as job_submit would and say where it would start now, or why
        it would wait. Nothing is stored."""
        options = {"vram": vram, "gpus": gpus, "node": node, "lane": lane, "after": after,
                   "memory": memory, "array": array}
        return await submit(True, command, options)

    @tool(annotations=ADDS, structured_output=False)
    async def job_submit(
        command: list[str],
        vram: str | None = None,
        gpus: int = 1,
        name: str | None = None,
        note: str | None = None,
        node: str | None = None,
        lane: str | None = None,
        after: str | None = None,
        after_any: str | None = None,
        timeout: str | None = None,
        memory: str | None = None,
        retries: int | None = None,
        priority: int | None = None,
        array: str | None = None,
        env: list[str] | None = None,
        tag: list[str] | None = None,
        workdir: str | None = None,
        directory: str | None = None,
        wait: bool = False,
        ctx: Context[Any, Any] | None = None,
    ) -> CallToolResult:
        """Queue a job: command as an argv (["python", "train.py"]). vram: memory to
        reserve per GPU (20GiB), always give it honestly; gpus: 0 for CPU work; note:
        what it is for; after: "12,13" run after those completed; lane: NODE:GPU to
        run in that card's order; array: "0-9" one job per index ({} in the command).
        The job runs in a snapshot of `directory` (an absolute path: your project),
        else of your first root when you offer roots, else of this server's working
        directory; the answer says which it took. wait: answer as job_wait does (an
        MCP task when your client has Tasks, else within 600 s)."""
        where, why = await submit_directory(directory, ctx)
        options = {
            "vram": vram, "gpus": gpus, "name": name, "note": note, "node": node,
            "lane": lane, "after": after, "after-any": after_any, "timeout": timeout,
            "memory": memory, "retries": retries, "priority": priority, "array": array,
            "env": env or [], "tag": tag or [], "workdir": workdir,
        }
        said = f"snapshot of {where} ({why})" if where is not None else (
            "snapshot of the server's working directory (no directory given, no roots offered)")
        queued = await submit(False, command, options, cwd=where, said=said)
        return await mcp_tasks.after_submit(wait_doc, queued, wait, ctx, WAIT_MAX)

    # ---------------------------------------------------------------- changing jobs

    @tool(annotations=ENDS, structured_output=False)
    async def job_cancel(job_ids: list[int]) -> CallToolResult:
        """Cancel jobs; a running one's process group is killed and its work lost.
        Confirm with the user before cancelling a job you did not submit."""
        return await nvq_json("job", "cancel", *_ids(job_ids))

    @tool(annotations=ADDS, structured_output=False)
    async def job_requeue(job_ids: list[int], artifacts: str | None = None) -> CallToolResult:
        """Run finished jobs again, same id and note (artifacts: keep or fresh)."""
        return await nvq_json("job", "requeue", *_ids(job_ids), *_opt("--artifacts", artifacts))

    @tool(annotations=SETS, structured_output=False)
    async def job_edit(
        job_id: int,
        drop_after: str | None = None,
        add_after: str | None = None,
        vram: str | None = None,
        gpus: int | None = None,
        node: str | None = None,
        timeout: str | None = None,
        priority: int | None = None,
        name: str | None = None,
        note: str | None = None,
    ) -> CallToolResult:
        """Change a waiting job (a running one: priority, name, note only); it keeps
        its id, note, place and submitter. Prefer this to resubmitting."""
        options = {"drop-after": drop_after, "add-after": add_after, "vram": vram,
                   "gpus": gpus, "node": node, "timeout": timeout, "priority": priority,
                   "name": name, "note": note}
        flags = [x for k, v in options.items() for x in _opt(f"--{k}", v)]
        return await nvq_json("job", "edit", str(job_id), *flags)

    @tool(annotations=SETS, structured_output=False)
    async def job_release(job_ids: list[int]) -> CallToolResult:
        """Run held jobs without the prerequisites that ended badly. Never when the
        prerequisite produced the input the job reads."""
        return await nvq_json("job", "release", *_ids(job_ids))

    @tool(annotations=ADDS, structured_output=False)
    async def job_note(job_id: int, append: str) -> CallToolResult:
        """Add a line to a job's note (what was learned, what to do next)."""
        return await nvq_json("job", "note", str(job_id), "--append", append)

    @tool(annotations=SETS, structured_output=False)
    async def queue_ack(alert_ids: list[int]) -> CallToolResult:
        """Acknowledge alerts. Only when the user has seen them or the cause is fixed."""
        return await nvq_json("queue", "ack", *_ids(alert_ids))

    @tool(annotations=ADDS, structured_output=False)
    async def lane_reorder(
        lane: str,
        action: str,
        job_ids: list[int] | None = None,
        to: str | None = None,
        before: int | None = None,
        at: str | None = None,
    ) -> CallToolResult:
        """Reorder a lane (NODE:GPU): action move (job_ids, to head|N or before),
        swap (two job_ids), skip, assign (job_ids, at head|N), pause or resume."""
        args = [lane, action, *_ids(job_ids or []), *_opt("--to", to),
                *_opt("--before", before), *_opt("--at", at)]
        return await nvq_json("queue", "lane", *args)

    return server


async def submit_directory(
    directory: str | None, ctx: Context[Any, Any] | None
) -> tuple[Path | None, str]:
    """The directory a submit snapshots, and why that one: `directory` when given,
    else the client's first root (a file:// URI) when it offers roots; (None, ""):
    this server's own working directory."""
    if directory is not None:
        path = Path(directory)
        if not path.is_absolute() or not await anyio.Path(path).is_dir():
            raise refusal(f"job_submit: argument 'directory': {directory!r} is not an "
                          "absolute path to a directory")
        return path, "the directory given"
    caps = ctx.client_capabilities if ctx is not None else None
    if ctx is None or caps is None or caps.roots is None:
        return None, ""
    with warnings.catch_warnings():  # roots are deprecated in MCP's next revision
        warnings.simplefilter("ignore")
        roots = (await ctx.session.list_roots()).roots
    for root in roots:
        uri = urlparse(str(root.uri))
        if uri.scheme == "file" and await anyio.Path(unquote(uri.path)).is_dir():
            return Path(unquote(uri.path)), "the client's first root"
    return None, ""


def serve() -> None:
    build().run("stdio")
