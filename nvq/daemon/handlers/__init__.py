"""Every CLI request's handler, by request type: each module registers its handlers,
with who may send each, where they are written (`@handles`, nvq.daemon.handlers.registry);
importing this package imports them all, so HANDLERS and PERMISSIONS are whole. The
reply is the one nvq.control.REPLIES names, where the client reads it too. A handler
locks what it needs, checks, acts (one transition), and returns its reply.

One module per verb family, named as the CLI module that sends its requests
(`handlers/X.py` ⇄ `nvq/cli/commands/X.py`; the families are listed in
docs/DESIGN.md, Front ends). `subscribe` (the event stream) and `history` (card
history) serve the TUI and the web page; `submit_preview` is `submit --dry-run`'s.

`nvq logs` is not here: it streams (`nvq.daemon.handlers.logs.open_logs`)."""

from __future__ import annotations

from nvq import control as c
from nvq.daemon.handlers import (  # noqa: F401 - each registers its handlers on import
    artifacts,
    busy,
    cluster,
    daemon,
    edit,
    history,
    image,
    jobs,
    lanes,
    move,
    node,
    ops,
    policy,
    queue,
    report,
    reserve,
    submit,
    submit_from_job,
    why,
    world,
)
from nvq.daemon.handlers.registry import (
    HANDLERS,
    PERMISSIONS,
    Handler,
    PermissionRule,
    allows,
    permission,
)
from nvq.domain.permissions import ANYONE, owner, private

# Streams other wings serve: who may open each.
allows(c.Logs, private("read the logs of"))  # nvq.daemon.handlers.logs.open_logs
allows(c.Subscribe, ANYONE)
# a session-like exchange (nvq.daemon.artifacts.snapshot_intake): any member may store blobs
allows(c.ReceiveSnapshot, ANYONE)
# nvq.daemon.sessions.sessions (a shell's submit is checked as a submit)
allows(c.Shell, ANYONE)
allows(c.Exec, owner("exec into"))
allows(c.Forward, owner("forward a port to"))

__all__ = ["HANDLERS", "PERMISSIONS", "Handler", "PermissionRule", "permission"]
