"""A job pinned to a node (`--node`) or to a card's lane (`--lane`): the pin checked
against the queue's nodes, and a lane job's place at its lane's tail. Submit, `job
edit`, `job move` and `job requeue` all place a job so."""

from __future__ import annotations

import msgspec

from nvq.daemon.core.errors import BadRequest
from nvq.daemon.core.state import State
from nvq.domain import lanes, request
from nvq.domain.placement import name_list
from nvq.model import JobRecord, JobSpec


def check_pin(state: State, name: str) -> None:
    """`--node` is a prefix, but one that names two nodes is refused, as `--lane` and
    `queue drain` refuse it: a pin is meant to choose. A cluster's name (its pilots,
    `hpc/<id>`) is the one prefix meant for several nodes. One that names no configured
    node is refused from the config alone, not only once the nodes have reported: a
    daemon whose nodes are still connecting would otherwise take a job it can never run."""
    clusters = [c.name for c in state.config.clusters]
    if name in state.nodes or any(n == name or name.startswith(f"{n}/") for n in clusters):
        return
    matches = [n for n in state.nodes if n.startswith(name)]
    if len(matches) > 1:
        raise BadRequest(f"--node {name!r} matches several nodes: {', '.join(matches)}")
    if not matches and not any(n.startswith(name) for n in clusters):
        names = name_list([*state.nodes, *clusters]) or "none"
        raise BadRequest(f"--node {name!r} matches no node (nodes: {names})")


def into_lane(state: State, spec: JobSpec, job: JobRecord) -> JobRecord:
    """What only the queue knows: the lane's node and card exist. Its form, and that it
    comes without --node and with one GPU, validate_spec checked."""
    prefix, gpu = lanes.parse_lane(spec.lane or "")
    node = state.find_node(prefix)
    if node.hello is not None and gpu not in {g.index for g in node.hello.gpus}:
        have = ", ".join(str(g.index) for g in node.hello.gpus) or "none"
        raise BadRequest(f"--lane {spec.lane}: node {node.name} has no GPU {gpu} (GPUs: {have})")
    name = lanes.lane_name(node.name, gpu)
    return msgspec.structs.replace(request.asking(job, lane=name), lane_pos=lane_tail(state, name))


def lane_tail(state: State, lane: str) -> float:
    """The position after the last queued job of `lane`."""
    queued = lanes.queued_order([j for j in state.jobs.values() if j.spec.lane == lane])
    return max((j.lane_pos or 0.0 for j in queued), default=0.0) + 1.0
