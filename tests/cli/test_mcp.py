"""`nvq mcp` through the MCP SDK's own stdio client: the tools and their annotations,
then status, a dry run, a submit, a wait and the result, each the document the CLI's
`--json` prints; an error document comes back as a tool error; and the SDK's contract:
version, outputSchema and structuredContent, arguments checked, roots."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import types
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from pydantic import FileUrl

from nvq import __version__ as nvq_version
from nvq.agents.mcp_contract import COMMANDS, output_schema
from tests.cluster import Nvq

RESULT = 'echo "{\\"loss\\": 0.25}" > "$NVQ_JOB_DIR/result.json"'


def test_an_agent_runs_a_job_through_mcp(nvq: Nvq) -> None:
    nvq.nodes_up()  # else the dry run rightly says the job waits for the node
    anyio.run(_session, nvq, backend="asyncio")


async def _session(nvq: Nvq) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "nvq", "mcp"], env=nvq.env, cwd=str(nvq.cwd)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()

        async def call(name: str, **arguments: Any) -> Any:
            result = await s.call_tool(name, arguments)
            assert not result.is_error, result.content
            return json.loads(result.content[0].text)  # type: ignore[union-attr]

        tools = {t.name: t for t in (await s.list_tools()).tools}
        assert {"queue_status", "job_submit", "job_submit_dry_run", "job_wait",
                "job_cancel", "lane_reorder", "queue_events"} <= set(tools)
        hints = {n: t.annotations for n, t in tools.items()}
        assert hints["queue_status"].read_only_hint is True  # type: ignore[union-attr]
        assert hints["job_submit_dry_run"].read_only_hint is True  # type: ignore[union-attr]
        assert hints["job_submit"].read_only_hint is False  # type: ignore[union-attr]
        assert hints["job_cancel"].destructive_hint is True  # type: ignore[union-attr]

        status = await call("queue_status")
        assert status.keys() == nvq.json("queue", "status").keys()  # the CLI's document
        preview = await call("job_submit_dry_run", command=["true"], gpus=0)
        assert preview["dry_run"] is True and preview["would_start"] is True
        assert (await call("job_list"))["jobs"] == []  # the dry run stored nothing

        job = await call(
            "job_submit", command=["sh", "-c", RESULT], gpus=0, note="through mcp"
        )
        done = await call("job_wait", job_ids=[job["id"]], timeout_seconds=60)
        assert done["exit_code"] == 0 and done["jobs"][0]["state"] == "completed"
        assert await call("job_result", job_id=job["id"]) == {
            "id": job["id"], "result": {"loss": 0.25}}
        assert (await call("job_show", job_id=job["id"]))["note"] == "through mcp"

        missing = await s.call_tool("job_show", {"job_id": 999})
        assert missing.is_error
        assert '"exit_code": 2' in missing.content[0].text  # type: ignore[union-attr]


def test_mcp_as_the_sdk_intends(nvq: Nvq, tmp_path: Path) -> None:
    """The server's version; every tool's outputSchema is its command's schema and its
    structuredContent the document; unknown or ill-typed arguments refused in one line
    naming them, with nothing done; `job_submit` snapshots the directory named, else the
    client's first root, and says which; `job_wait` answers at the first bad end."""
    given, rooted = tmp_path / "given", tmp_path / "rooted"
    for where in (given, rooted):
        where.mkdir()
        (where / "which.txt").write_text(where.name)
    nvq.nodes_up()
    anyio.run(_contract, nvq, given, rooted, backend="asyncio")


async def _contract(nvq: Nvq, given: Path, rooted: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "nvq", "mcp"], env=nvq.env, cwd=str(nvq.cwd)
    )

    async def roots(context: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
        root = types.Root(uri=FileUrl(rooted.as_uri()), name="project")
        return types.ListRootsResult(roots=[root])

    async with stdio_client(params) as (read, write), ClientSession(
        read, write, list_roots_callback=roots
    ) as s:
        init = await s.initialize()
        assert init.server_info.name == "nvq" and init.server_info.version == nvq_version

        tools = {t.name: t for t in (await s.list_tools()).tools}
        for name, t in tools.items():
            assert t.output_schema == output_schema(COMMANDS[name]), name
            assert t.input_schema.get("additionalProperties") is False, name

        async def refused(name: str, **arguments: Any) -> str:
            result = await s.call_tool(name, arguments)
            assert result.is_error, result
            (text,) = [c.text for c in result.content]  # type: ignore[union-attr]
            assert "\n" not in text, text
            return text

        # nothing is submitted for a typo, nor for a value of the wrong type
        typo = await refused("job_submit", command=["true"], gpus=0, vram_typo="20GiB")
        assert "unknown argument 'vram_typo'" in typo and json.loads(typo)["exit_code"] == 2
        bad = await refused("job_submit", command=["true"], gpus="two")
        assert "argument 'gpus'" in bad
        missing = await refused("job_submit", command=["true"], gpus=0, directory="relative/dir")
        assert "argument 'directory'" in missing
        assert nvq.json("job", "ls")["jobs"] == []

        async def call(name: str, **arguments: Any) -> Any:
            result = await s.call_tool(name, arguments)  # the SDK checks outputSchema too
            assert not result.is_error, result.content
            doc = json.loads(result.content[0].text)  # type: ignore[union-attr]
            assert result.structured_content == doc
            return result

        shown = []
        for directory in (str(given), None):
            args = {"directory": directory} if directory else {}
            result = await call("job_submit", command=["cat", "which.txt"], gpus=0, **args)
            shown.append(result.content[1].text)
            job = result.structured_content
            assert job is not None
            waited = await call("job_wait", job_ids=[job["id"]], timeout_seconds=120)
            assert waited.structured_content["exit_code"] == 0
            logs = await call("job_logs", job_id=job["id"])
            assert logs.structured_content["text"].strip() in ("given", "rooted")
        assert shown == [f"snapshot of {given} (the directory given)",
                         f"snapshot of {rooted} (the client's first root)"]
        texts = [nvq.ok("job", "logs", str(j["id"])).out.strip()
                 for j in nvq.json("job", "ls")["jobs"]]
        assert texts == ["given", "rooted"]

        for name in ("queue_status", "queue_nodes", "queue_lanes", "job_list", "queue_alerts",
                     "queue_events"):
            await call(name)
        guide = await s.call_tool("nvq_skill", {})  # Markdown, and {"text": ...} as `skill --json`
        assert guide.structured_content == {"text": guide.content[0].text}  # type: ignore[union-attr]

        # a wait answers at the first bad end, whatever its timeout
        bad_job = (await call("job_submit", command=["false"], gpus=0)).structured_content
        slow = (await call("job_submit", command=["sleep", "600"], gpus=0)).structured_content
        assert bad_job is not None and slow is not None
        done = await s.call_tool("job_wait", {"job_ids": [bad_job["id"], slow["id"]],
                                              "timeout_seconds": 600})
        doc = json.loads(done.content[0].text)  # type: ignore[union-attr]
        assert (doc["exit_code"], doc["still_going"]) == (1, [slow["id"]])
        await call("job_cancel", job_ids=[slow["id"]])
