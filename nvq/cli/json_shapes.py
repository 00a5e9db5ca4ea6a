"""What each command prints with `--json`, as a type: mostly the reply nvq.control.REPLIES
names for the request the command sends, else a document the CLI makes itself.
`nvq schema` prints their JSON Schemas (msgspec.json.schema), and the README's table
of commands and their JSON shapes is made from here (`readme_table`; a test holds the
README to it).

A command's variants (`job submit --array`, `job purge --dry-run`) print other
documents: the shape here is the plain call's, `variants` the others' and `note` says
which prints which. Any command that cannot go on prints an `ErrorDocument` instead;
every command's schema is `anyOf` its shapes and that one error shape."""

from __future__ import annotations

import functools
import types
import typing
from dataclasses import dataclass
from typing import Any

import msgspec

from nvq import control as c
from nvq.cli.sweeps import MemberResult
from nvq.control.plain import LISTED
from nvq.control.stream_events import StreamEvent
from nvq.model import Job


class ErrorDocument(msgspec.Struct, kw_only=True):
    """Any command's --json document when it cannot go on: the line `nvq` would print
    on stderr, and the exit code (2 bad input, 1 a refusal on the merits)."""

    error: str
    exit_code: int


class JobResult(msgspec.Struct, kw_only=True):
    """`job result ID --json`: the job's result.json payload (null: none yet)."""

    id: int
    result: Any


class JobResults(msgspec.Struct, kw_only=True):
    """`job result ID ID... --json`: each job's result.json payload."""

    results: list[JobResult]


class ArrayResults(msgspec.Struct, kw_only=True):
    """`job result --array ID --json`: every member's index, parameters, state and result."""

    array: int
    members: list[MemberResult]


class PurgePreview(msgspec.Struct, kw_only=True):
    """`job purge --dry-run --json`: how many finished jobs it would forget, and which."""

    would_purge: int
    ids: list[int]


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


class SkillText(msgspec.Struct, kw_only=True):
    """`skill --json`: the skill (SKILL.md), as Markdown."""

    text: str


class CompletionScript(msgspec.Struct, kw_only=True):
    """`completion SHELL --json`: the shell's completion script."""

    shell: str
    script: str


class KeeperLog(msgspec.Struct, kw_only=True):
    """`queue keeper logs --json`: the keeper's log, as text."""

    text: str


@functools.cache
def listing(request: type[c.Request]) -> Any:
    """The document of a request answered with a list (nvq.control.plain.LISTED): an
    object with one field, the list, named there (`JobList` is `{"jobs": [Job]}`)."""
    (item,) = typing.get_args(c.REPLIES[request])
    name = "Job" if item is Job else item.__name__
    items = types.GenericAlias(list, (item,))
    return msgspec.defstruct(f"{name}List", [(LISTED[request], items)], kw_only=True)


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


class CardHealthList(msgspec.Struct, kw_only=True):
    """`node health --json`: every card's health."""

    cards: list[CardHealth]


@dataclass(frozen=True)
class Shape:
    kind: Any  # the type the plain call's document decodes into
    note: str = ""
    variants: tuple[Any, ...] = ()  # the types its variants (`note`) print instead


SHAPES: dict[str, Shape] = {
    "job submit": Shape(
        c.REPLIES[c.Submit],
        "`env_captured` is null (`job show ID --json` has it); --array: ArraySubmitted; "
        "--wait: the job as it ended (an array's: WaitResult, as `job wait`); --dry-run: "
        "SubmitPreview",
        (c.ArraySubmitted, c.WaitResult, c.SubmitPreview),
    ),
    "job clone": Shape(c.REPLIES[c.Clone], "`env_captured` is null, as a submit's"),
    "job ls": Shape(
        c.JobPage, "`more`: the window left jobs out; `env_captured` is null (`job show`)"
    ),
    "job show": Shape(c.REPLIES[c.ShowJob]),
    "job why": Shape(c.REPLIES[c.Why]),
    "job wait": Shape(c.WaitResult),
    "job cancel": Shape(listing(c.Cancel)),
    "job release": Shape(listing(c.Release)),
    "job note": Shape(c.REPLIES[c.Note]),
    "job result": Shape(
        JobResult, "several ids: JobResults; --array: ArrayResults", (JobResults, ArrayResults)
    ),
    "job requeue": Shape(listing(c.Requeue)),
    "job purge": Shape(c.REPLIES[c.Purge], "--dry-run: PurgePreview", (PurgePreview,)),
    "job edit": Shape(c.REPLIES[c.EditJob]),
    "job move": Shape(c.REPLIES[c.Move]),
    "job priority": Shape(listing(c.Priority)),
    "job pause": Shape(listing(c.Pause)),
    "job resume": Shape(listing(c.Resume)),
    "job artifacts": Shape(c.REPLIES[c.JobArtifacts], "--get: the files copied"),
    "job logs": Shape(JobLogs),
    "job pull": Shape(JobPulled),
    "queue status": Shape(c.REPLIES[c.Status]),
    "queue nodes": Shape(listing(c.Nodes)),
    "queue drain": Shape(c.REPLIES[c.NodeFlag]),
    "queue resume": Shape(c.REPLIES[c.NodeFlag]),
    "queue ignore": Shape(c.REPLIES[c.NodeFlag]),
    "queue unignore": Shape(c.REPLIES[c.NodeFlag]),
    "queue events": Shape(
        listing(c.Events),
        "--follow: one compact StreamEvent a line, as each happens; an end line's `end` "
        "says how the job ended",
        (StreamEvent,),
    ),
    "queue lanes": Shape(listing(c.Lanes)),
    "queue lane": Shape(c.REPLIES[c.Lane]),
    "queue busy": Shape(c.REPLIES[c.BusyMode]),
    "queue forbid-busy-assign": Shape(c.REPLIES[c.BusyAssign]),
    "queue allow-busy-assign": Shape(c.REPLIES[c.BusyAssign]),
    "queue alerts": Shape(listing(c.Alerts)),
    "queue ack": Shape(listing(c.Ack)),
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
    "node health": Shape(CardHealthList),
    "image push": Shape(c.REPLIES[c.ImagePush]),
    "image ls": Shape(listing(c.ImageList)),
    "cluster status": Shape(listing(c.ClusterStatus)),
    "cluster scale": Shape(c.REPLIES[c.ClusterScale]),
    "cluster drain": Shape(c.REPLIES[c.ClusterDrain]),
    "cluster retry": Shape(c.REPLIES[c.ClusterRetry]),
    "skill": Shape(SkillText),
    "skill install": Shape(SkillInstalled),
    "completion": Shape(CompletionScript),
    "schema": Shape(dict[str, Any], "a JSON Schema; no command: every command's, by name"),
    "report": Shape(c.REPLIES[c.Report], "`--csv`: the same rows as CSV instead"),
    "reserve add": Shape(c.REPLIES[c.ReserveAdd]),
    "reserve ls": Shape(listing(c.ReserveList)),
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
    """`command`'s --json document as JSON Schema (KeyError: no such shape): `anyOf`
    the plain call's shape, its variants' and `ErrorDocument`, defined in `$defs`."""
    shape = SHAPES[command]
    kinds = [shape.kind, *shape.variants, ErrorDocument]
    shapes, defs = msgspec.json.schema_components(kinds)
    doc: dict[str, Any] = {"anyOf": list(shapes), "$defs": defs}
    if shape.note:
        doc["description"] = f"nvq {command} --json; {shape.note}"
    else:
        doc["description"] = f"nvq {command} --json"
    return doc


def type_name(kind: Any) -> str:
    """A type as the README's table shows it: `JobDetail`, `{"jobs": [Job]}`."""
    if kind is Any:
        return "any JSON"
    if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
        fields = msgspec.structs.fields(kind)
        if len(fields) == 1 and typing.get_origin(fields[0].type) is list:  # a list, named
            return f'{{"{fields[0].encode_name}": {type_name(fields[0].type)}}}'
    if isinstance(kind, type):
        return "Job" if kind is Job else kind.__name__
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is dict:
        return "object"
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
