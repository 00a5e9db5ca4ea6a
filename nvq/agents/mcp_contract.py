"""What every tool of `nvq mcp` keeps, whatever it does: the arguments it is called
with are checked before anything runs (a name it does not take, or a value of the
wrong type, is refused in one line naming it, as the CLI's error document), and it is
listed with its command's `nvq schema` as its outputSchema (and no arguments beyond
its own), so that the structuredContent it answers with can be held to it."""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, InputRequiredResult
from mcp.types import Tool as ToolInfo
from pydantic import ValidationError

from nvq.cli.json_shapes import schema

# Each tool's command: its document is that command's, and so is its outputSchema.
COMMANDS = {
    "queue_status": "queue status", "queue_nodes": "queue nodes", "queue_lanes": "queue lanes",
    "queue_lane": "queue lane", "job_list": "job ls", "job_show": "job show",
    "job_why": "job why", "job_logs": "job logs", "job_result": "job result",
    "queue_alerts": "queue alerts", "queue_events": "queue events", "job_wait": "job wait",
    "nvq_skill": "skill", "job_submit_dry_run": "job submit", "job_submit": "job submit",
    "job_cancel": "job cancel", "job_requeue": "job requeue", "job_edit": "job edit",
    "job_release": "job release", "job_note": "job note", "queue_ack": "queue ack",
    "lane_reorder": "queue lane",
}


def output_schema(command: str) -> dict[str, Any]:
    """`nvq schema COMMAND` as MCP takes an outputSchema: an object at its root."""
    return {"type": "object", **schema(command)}


def refusal(message: str, code: int = 2) -> ToolError:
    """A tool error that reads as the CLI's error document."""
    return ToolError(json.dumps({"error": message, "exit_code": code}))


def argument_error(tool: str, known: list[str], model: Any, arguments: dict[str, Any]) -> str | None:
    """The one line that refuses `arguments` (None: they are fine): an argument the
    tool does not take, else the first that is not of its type."""
    unknown = sorted(set(arguments) - set(known))
    if unknown:
        return f"{tool}: unknown argument {unknown[0]!r} (it takes: {', '.join(known)})"
    try:
        model.model_validate(arguments)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "arguments"
        return f"{tool}: argument {where!r}: {first['msg']} (got {first['input']!r})"
    return None


class NvqServer(MCPServer):
    """MCPServer with nvq's contract on every tool: arguments checked before anything
    runs, and the command's schema as the tool's outputSchema."""

    async def list_tools(self) -> list[ToolInfo]:
        tools = await super().list_tools()
        return [
            t.model_copy(update={
                "input_schema": {**t.input_schema, "additionalProperties": False},
                "output_schema": output_schema(COMMANDS[t.name]),
            })
            for t in tools
        ]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        tool = self._tool_manager.get_tool(name)
        if tool is not None:
            known = list(tool.parameters.get("properties", {}))
            wrong = argument_error(name, known, tool.fn_metadata.arg_model, arguments)
            if wrong is not None:
                raise refusal(wrong)
        return await super().call_tool(name, arguments, context)
