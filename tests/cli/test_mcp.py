"""`nvq mcp` through the MCP SDK's own stdio client: the tools and their annotations,
then status, a dry run, a submit, a wait and the result, each the document the CLI's
`--json` prints; an error document comes back as a tool error."""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

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
