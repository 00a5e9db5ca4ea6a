"""What each command prints with `--json`, as a type: mostly the reply nvq.control.REPLIES
names for the request the command sends, else a document the CLI makes itself.
`nvq schema` prints their JSON Schemas (msgspec.json.schema), and the README's table
of commands and their JSON shapes is made from here (`readme_table`; a test holds the
README to it).

A command's variants (`job submit --array`, `job purge --dry-run`) print other
documents: the shape here is the plain call's, and `note` says what differs."""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Any

import msgspec

from nvq import control as c
from nvq.model import Job


class JobResult(msgspec.Struct, kw_only=True):
    """`job result ID --json`: the job's result.json payload (null: none yet)."""

    id: int
    result: Any


class DaemonStopped(msgspec.Struct, kw_only=True):
    """`daemon stop --json`: whether it stopped, and the node runners it left running."""

    stopped: bool
    pid: int | None = None
    runners_left: int | msgspec.UnsetType = msgspec.UNSET
    jobs_running: int | msgspec.UnsetType = msgspec.UNSET
    running: bool | msgspec.UnsetType = msgspec.UNSET  # false: no daemon was running


class DaemonStarted(msgspec.Struct, kw_only=True):
    """`daemon start --json`: whether this started it, and its pid."""

    started: bool
    pid: int | None = None


class JobLogs(msgspec.Struct, kw_only=True):
    """`job logs ID --json`: one stream of the job's output, as text."""

    id: int
    stream: str
    text: str
    member: str | msgspec.UnsetType = msgspec.UNSET  # an array member: which one


class JobPulled(msgspec.Struct, kw_only=True):
    """`job pull ID --json`: what was copied from the job's node, and where to."""

    id: int
    node: str
    to: str
    paths: list[str]


class SkillInstalled(msgspec.Struct, kw_only=True):
    """`skill install --json`: where the skill was written, and whether it changed."""

    path: str
    changed: bool


class KeeperLog(msgspec.Struct, kw_only=True):
    """`queue keeper logs --json`: the keeper's log, as text."""

    text: str


class CardHealth(msgspec.Struct, kw_only=True):
    """`node health --json`: one card's health, as `queue nodes` knows it."""

    card: str  # NODE:IDX, as `queue drain|resume` take it
    node: str
    index: int
    name: str
    health: str  # "ok" | "unhealthy" | "drained"
    faults: list[str]  # the evidence (for an unhealthy card)
    since: float | None  # when it left placement (or was returned)
    by: str | None  # who drained or returned it by hand
    schedulable: bool


@dataclass(frozen=True)
class Shape:
    kind: Any  # the type the document decodes into
    note: str = ""


SHAPES: dict[str, Shape] = {
    "job submit": Shape(
        c.REPLIES[c.Submit],
        "--array: ArraySubmitted; --wait: the job (or array) as it ended, as `job wait`; "
        "--dry-run: SubmitPreview",
    ),
    "job ls": Shape(c.JobPage, "`more`: the window left jobs out; `env_captured` is null"),
    "job show": Shape(c.REPLIES[c.ShowJob]),
    "job why": Shape(c.REPLIES[c.Why]),
    "job wait": Shape(c.WaitResult),
    "job cancel": Shape(c.REPLIES[c.Cancel]),
    "job release": Shape(c.REPLIES[c.Release]),
    "job note": Shape(c.REPLIES[c.Note]),
    "job result": Shape(JobResult, "--array: every member's index, parameters and result"),
    "job requeue": Shape(c.REPLIES[c.Requeue]),
    "job purge": Shape(c.REPLIES[c.Purge], "--dry-run: `would_purge` and `ids`"),
    "job edit": Shape(c.REPLIES[c.EditJob]),
    "job move": Shape(c.REPLIES[c.Move]),
    "job priority": Shape(c.REPLIES[c.Priority]),
    "job pause": Shape(c.REPLIES[c.Pause]),
    "job resume": Shape(c.REPLIES[c.Resume]),
    "job artifacts": Shape(c.REPLIES[c.JobArtifacts], "--get: the files copied"),
    "job logs": Shape(JobLogs),
    "job pull": Shape(JobPulled),
    "queue status": Shape(c.REPLIES[c.Status]),
    "queue nodes": Shape(c.REPLIES[c.Nodes]),
    "queue drain": Shape(c.REPLIES[c.NodeFlag]),
    "queue resume": Shape(c.REPLIES[c.NodeFlag]),
    "queue ignore": Shape(c.REPLIES[c.NodeFlag]),
    "queue unignore": Shape(c.REPLIES[c.NodeFlag]),
    "queue events": Shape(c.REPLIES[c.Events]),
    "queue lanes": Shape(c.REPLIES[c.Lanes]),
    "queue lane": Shape(c.REPLIES[c.Lane]),
    "queue busy": Shape(c.REPLIES[c.BusyMode]),
    "queue forbid-busy-assign": Shape(c.REPLIES[c.BusyAssign]),
    "queue allow-busy-assign": Shape(c.REPLIES[c.BusyAssign]),
    "queue alerts": Shape(c.REPLIES[c.Alerts]),
    "queue ack": Shape(c.REPLIES[c.Ack]),
    "queue backup": Shape(c.REPLIES[c.Backup]),
    "queue check": Shape(c.REPLIES[c.Check]),
    "queue gc": Shape(c.REPLIES[c.Gc]),
    "queue keeper logs": Shape(KeeperLog),
    "daemon stop": Shape(DaemonStopped),
    "daemon start": Shape(DaemonStarted),
    "daemon reload": Shape(c.REPLIES[c.Reload]),
    "node add": Shape(c.REPLIES[c.Reload], "the reload that followed the append"),
    "node bootstrap": Shape(c.REPLIES[c.Bootstrap]),
    "node stop": Shape(c.REPLIES[c.NodeStop]),
    "node start": Shape(c.REPLIES[c.NodeFlag]),
    "node status": Shape(c.REPLIES[c.NodeStatus]),
    "node restart": Shape(c.REPLIES[c.NodeRestart]),
    "node health": Shape(list[CardHealth]),
    "image push": Shape(c.REPLIES[c.ImagePush]),
    "image ls": Shape(c.REPLIES[c.ImageList]),
    "cluster status": Shape(c.REPLIES[c.ClusterStatus]),
    "cluster scale": Shape(c.REPLIES[c.ClusterScale]),
    "cluster drain": Shape(c.REPLIES[c.ClusterDrain]),
    "cluster retry": Shape(c.REPLIES[c.ClusterRetry]),
    "skill install": Shape(SkillInstalled),
    "report": Shape(c.REPLIES[c.Report], "`--csv`: the same rows as CSV instead"),
    "reserve add": Shape(c.REPLIES[c.ReserveAdd]),
    "reserve ls": Shape(c.REPLIES[c.ReserveList]),
    "reserve rm": Shape(c.REPLIES[c.ReserveRemove]),
}

# Commands with --json whose document has no type yet (the CLI builds a dict, or prints
# lines as they come): `nvq schema` says so rather than guess.
NOT_DESCRIBED: dict[str, str] = {
    "web": "the page's URL and token, printed once it listens",
    "job shell": "refused: a shell's output is a terminal",
    "job forward": "the local URL and the job's node and port, printed once it listens",
    "queue restore": "the restored store's figures, built by the CLI",
    "queue keeper install": "the keeper's kind and unit, built by nvq.keeper",
    "queue keeper status": "the keeper's kind and pid, built by nvq.keeper",
    "queue keeper stop": "whether a keeper was stopped, built by nvq.keeper",
    "project test": "the test job's outcome, built by the CLI",
}


def schema(command: str) -> dict[str, Any]:
    """`command`'s --json document as JSON Schema (KeyError: no such shape)."""
    shape = SHAPES[command]
    doc = msgspec.json.schema(shape.kind)
    if shape.note:
        doc["description"] = f"nvq {command} --json; {shape.note}"
    else:
        doc["description"] = f"nvq {command} --json"
    return doc


def type_name(kind: Any) -> str:
    """A type as the README's table shows it: `JobDetail`, `[Job]`, `[JobRow] | JobPage`."""
    if kind is Any:
        return "any JSON"
    if isinstance(kind, type):
        return "Job" if kind is Job else kind.__name__
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is list:
        return f"[{type_name(args[0])}]"
    return " | ".join(type_name(a) for a in args)


def readme_table() -> str:
    """The README's table: each command with --json and the shape it prints."""
    rows = ["| command | `--json` prints |", "| --- | --- |"]
    for command, shape in SHAPES.items():
        extra = f" ({shape.note})" if shape.note else ""
        rows.append(f"| `nvq {command}` | `{type_name(shape.kind)}`{extra} |")
    for command, what in NOT_DESCRIBED.items():
        rows.append(f"| `nvq {command}` | no schema yet: {what} |")
    return "\n".join(rows)
