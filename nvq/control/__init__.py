"""The CLI ⇄ daemon protocol on `$NVQ_HOME/daemon.sock`: requests, frames and the typed
replies. Every module's own names are exported here, so callers write `c.Submit`,
`c.JobDetail`, `c.REPLIES`, and a request or reply added to one of them needs no line
here (tests/daemon/test_control_exports.py holds the face to the modules)."""

from __future__ import annotations

from nvq.control.cluster_replies import *  # noqa: F403
from nvq.control.frames import *  # noqa: F403
from nvq.control.progress import *  # noqa: F403
from nvq.control.replies import *  # noqa: F403
from nvq.control.reply_types import *  # noqa: F403
from nvq.control.requests import *  # noqa: F403
from nvq.control.state_requests import *  # noqa: F403
from nvq.control.stream_events import *  # noqa: F403
from nvq.control.terminal import *  # noqa: F403
from nvq.model import Alert as Alert
