"""What a request handler works with: the state, and the services built around it
(`nvq.daemon.main` wires them)."""

from __future__ import annotations

from dataclasses import dataclass

from nvq.daemon.ops import Ops
from nvq.daemon.reassign import Machines
from nvq.daemon.state import State


@dataclass(frozen=True)
class Context:
    state: State
    machines: Machines  # reassignment, busy nodes, artifact syncs
    ops: Ops  # alerts, notifier, backups
