"""The CLI ⇄ daemon protocol on `$NVQ_HOME/daemon.sock`.

The CLI sends one request frame (a tagged msgspec struct, msgpack, the same framing as
the runner protocol) and reads reply frames until a `Done`. Streaming commands (`job
logs -f`) send `Chunk`s before it. Errors are a `Done` with `error` set: one line the
CLI prints as it is.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from nvq.model import JobSpec


class Submit(msgspec.Struct, tag="submit", frozen=True):
    spec: JobSpec


class ListJobs(msgspec.Struct, tag="ls", frozen=True):
    active: bool = False
    states: list[str] | None = None
    limit: int | None = None
    array: int | None = None  # members of this array only


class ShowJob(msgspec.Struct, tag="show", frozen=True):
    id: int
    logs: int = 0


class Cancel(msgspec.Struct, tag="cancel", frozen=True):
    ids: list[int]
    array: bool = False  # ids are array ids: every member not yet running


class Release(msgspec.Struct, tag="release", frozen=True):
    ids: list[int]


class Note(msgspec.Struct, tag="note", frozen=True):
    id: int
    text: str | None = None
    append: str | None = None
    clear: bool = False


class Result(msgspec.Struct, tag="result", frozen=True):
    id: int
    set_json: str | None = None


class Wait(msgspec.Struct, tag="wait", frozen=True):
    ids: list[int]
    timeout: float | None = None


class Logs(msgspec.Struct, tag="logs", frozen=True):
    id: int
    lines: int = 50
    follow: bool = False
    stream: Literal["stdout", "stderr"] = "stdout"


class Status(msgspec.Struct, tag="status", frozen=True):
    pass


class Nodes(msgspec.Struct, tag="nodes", frozen=True):
    procs: bool = False
    include_ignored: bool = False


class NodeFlag(msgspec.Struct, tag="node_flag", frozen=True):
    node: str
    flag: Literal["drained", "ignored"]
    value: bool


class Bootstrap(msgspec.Struct, tag="bootstrap", frozen=True):
    node: str
    force: bool = False


class Events(msgspec.Struct, tag="events", frozen=True):
    since: int = 0
    limit: int | None = None
    job_id: int | None = None


class StopDaemon(msgspec.Struct, tag="stop", frozen=True):
    pass


class Ping(msgspec.Struct, tag="ping", frozen=True):
    pass


# -- scheduling policy (issue 4) --------------------------------------------------------


class Requeue(msgspec.Struct, tag="requeue", frozen=True):
    ids: list[int]


class Purge(msgspec.Struct, tag="purge", frozen=True):
    before: float | None = None


class Edit(msgspec.Struct, tag="edit", frozen=True):
    id: int
    drop_after: list[int] = []
    add_after: list[int] = []


class Priority(msgspec.Struct, tag="priority", frozen=True):
    ids: list[int]
    change: str | None = None  # "5" sets, "+1"/"-2" adjust
    up: int | None = None  # places earlier in the dispatch order (negative: later)
    array: bool = False


class Pause(msgspec.Struct, tag="pause", frozen=True):
    ids: list[int]
    array: bool = False


class Resume(msgspec.Struct, tag="resume", frozen=True):
    ids: list[int]
    array: bool = False


class Lanes(msgspec.Struct, tag="lanes", frozen=True):
    pass


class Lane(msgspec.Struct, tag="lane", frozen=True):
    lane: str
    action: str | None = None  # None: show it
    ids: list[int] = []
    to: str | None = None
    before: int | None = None
    at: str | None = None


class Alerts(msgspec.Struct, tag="alerts", frozen=True):
    include_acked: bool = False


class Ack(msgspec.Struct, tag="ack", frozen=True):
    ids: list[int] | None = None  # None: every open alert


class Backup(msgspec.Struct, tag="backup", frozen=True):
    path: str | None = None  # absolute, on the queue host; None: the backup directory


# -- machines that come and go (issue 5) ------------------------------------------------


class JobArtifacts(msgspec.Struct, tag="job_artifacts", frozen=True):
    id: int


class BusyMode(msgspec.Struct, tag="busy_mode", frozen=True):
    node: str
    mode: str | None = None  # "on" | "off" | "auto"; None: show it


class BusyAssign(msgspec.Struct, tag="busy_assign", frozen=True):
    forbid: bool  # for the asking user's own busy nodes


Request = (
    Submit
    | JobArtifacts
    | BusyMode
    | BusyAssign
    | Alerts
    | Ack
    | Backup
    | ListJobs
    | ShowJob
    | Cancel
    | Release
    | Note
    | Result
    | Wait
    | Logs
    | Status
    | Nodes
    | NodeFlag
    | Bootstrap
    | Events
    | StopDaemon
    | Ping
    | Requeue
    | Purge
    | Edit
    | Priority
    | Pause
    | Resume
    | Lanes
    | Lane
)


class Chunk(msgspec.Struct, tag="chunk", frozen=True):
    data: bytes


class Done(msgspec.Struct, tag="done", frozen=True):
    data: Any = None
    error: str | None = None
    exit_code: int = 0  # what the CLI should exit with (wait: 0, 1 or 2)


Reply = Chunk | Done

request_decoder = msgspec.msgpack.Decoder(Request)
reply_decoder = msgspec.msgpack.Decoder(Reply)
encoder = msgspec.msgpack.Encoder()
