"""The plain wire: the same socket and frames, the request sent as JSON (its first
byte is `{`, which no msgpack request starts with) and every reply frame answered
as JSON, with secret-looking environment values already hidden.

It exists for the CLI's commonest reads (nvq.cli.fast), which then need nothing but
the standard library: importing msgspec and the typed replies costs a CLI call more
than the interpreter's own start. `want="json"` asks for the answer as `--json`
prints it (so the bytes are the ones the typed path prints); `want="data"` for the
plain data, to render as text."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from nvq.control.replies import JobPage
from nvq.control.requests import (
    Ack,
    Alerts,
    ClusterStatus,
    Events,
    ImageList,
    JobWindow,
    Lanes,
    Nodes,
    Priority,
    Request,
    Requeue,
    ReserveList,
    Result,
)
from nvq.control.state_requests import Cancel, Pause, Release, Resume

# The requests answered with a list, and the name `--json` gives it: every list is an
# object naming its list (`{"nodes": [...]}`), as `job ls` is `{"jobs": [...], "more":
# bool}`, so an agent parses every list one way and a field can join it later.
LISTED: dict[type[Request], str] = {
    Cancel: "jobs", Release: "jobs", Requeue: "jobs", Priority: "jobs", Pause: "jobs",
    Resume: "jobs", Nodes: "nodes", Events: "events", Lanes: "lanes", Alerts: "alerts",
    Ack: "alerts", ImageList: "nodes", ClusterStatus: "clusters", ReserveList: "reservations",
}


def listed(request: type[Request], answer: Any) -> dict[str, Any]:
    """`--json`'s document of a list answer: `{NAME: answer}`."""
    return {LISTED[request]: answer}


class PlainRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    request: Request
    # "stream": a `job logs` request's chunks, each a frame, then its `Done`
    want: Literal["data", "json", "stream"] = "data"


plain_request_decoder = msgspec.json.Decoder(PlainRequest)
plain_encoder = msgspec.json.Encoder()


def json_document(request: Request, answer: Any) -> Any:
    """What `--json` prints for `request`'s answer: the answer itself; for a `job ls`
    window always `{"jobs": [...], "more": bool}`, one shape whatever the data (a
    parser written against a short queue keeps working on a long one), and
    `unreachable` beside them while a running job's node is out of reach. The typed CLI
    and the plain wire both print this. `job result ID`: `{"id": ID, "result": ...}`,
    the job named beside its payload, which may be anything (null: none yet). A list
answer: the object LISTED names it in."""
    if isinstance(request, Result):
        return {"id": request.id, "result": answer}
    if type(request) in LISTED:
        return listed(type(request), answer)
    if not isinstance(request, JobWindow):
        return answer
    # a JobPage where the CLI decoded it; the dict the daemon's handler built
    jobs, more, away = (
        (answer.jobs, answer.more, answer.unreachable) if isinstance(answer, JobPage)
        else (answer["jobs"], answer["more"], answer.get("unreachable", msgspec.UNSET)))
    doc = {"jobs": jobs, "more": bool(more)}
    return doc if away is msgspec.UNSET else {**doc, "unreachable": away}
