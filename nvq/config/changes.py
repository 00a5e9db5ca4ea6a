"""What a re-read config.toml changes for a running daemon (`nvq daemon reload`,
SIGHUP). Pure: the old and new configs in, the plan out.

Nodes added are connected; nodes removed are drained (their running jobs finish) and
forgotten once idle; a node whose connection changed is reconnected; its other fields
(cards, owner, setup, ...) apply at once. A `[[clusters]]` table that changed applies
to its next pilots and lifts a block on requests (as `nvq cluster retry` does);
adding or removing a cluster needs a restart. Everything else in the file applies at once
too (limits, users, notify, submit, most of [queue]), except what the daemon set up
at start: those are refused, one line each, and the running value is kept."""

from __future__ import annotations

from typing import Any

import msgspec

from nvq.config.types import ClusterConfig, Config, NodeConfig, QueueConfig

# [queue] keys the daemon acts on only at start (the local node, the control socket).
RESTART_QUEUE = ("local_node", "local_node_name", "local_home", "local_gpus", "local_env",
                 "members_group")
# Whole sections set up at start: the remote CLI, backups.
RESTART_SECTIONS = ("remote", "backup")
# A node's fields that change how it is reached (or which runner it is).
RECONNECT = ("host", "port", "user", "identity", "known_hosts", "home", "python", "jump",
             "hops")
# Read by its runner when it starts: a runner already running keeps what it had.
AT_RUNNER_START = ("env",)


class ConfigChanges(msgspec.Struct, kw_only=True):
    config: Config  # what the daemon runs with from now on
    added: list[NodeConfig] = []
    removed: list[str] = []
    reconnect: list[NodeConfig] = []  # their link is opened again
    updated: list[NodeConfig] = []  # the rest of their fields, applied in place
    applied: list[str] = []  # one line per change made
    refused: list[str] = []  # one line per change that needs a restart


def _show(value: Any) -> str:
    if isinstance(value, msgspec.Struct):
        return "(changed)"
    return repr(value) if isinstance(value, str) else str(value).lower() if isinstance(
        value, bool) else str(value)


def diff(old: Config, new: Config) -> ConfigChanges:
    out = ConfigChanges(config=new)
    queue_kept: dict[str, Any] = {}
    for key in QueueConfig.__struct_fields__:
        was, now = getattr(old.queue, key), getattr(new.queue, key)
        if was == now:
            continue
        if key in RESTART_QUEUE:
            queue_kept[key] = was
            out.refused.append(
                f"[queue] {key} changed: needs a daemon restart (running with {_show(was)})")
        else:
            out.applied.append(f"[queue] {key}: {_show(was)} -> {_show(now)}")
    kept: dict[str, Any] = {}
    if queue_kept:
        kept["queue"] = msgspec.structs.replace(new.queue, **queue_kept)
    for section in RESTART_SECTIONS:
        if getattr(old, section) != getattr(new, section):
            kept[section] = getattr(old, section)
            out.refused.append(f"[{section}] changed: needs a daemon restart (kept as it was)")
    clusters = _clusters(old, new, out)
    if clusters is not None:
        kept["clusters"] = clusters
    for section in ("users", "limits", "notify", "submit"):
        if getattr(old, section) != getattr(new, section):
            out.applied.append(f"[{section}] changed: applied")
    before = {n.name: n for n in old.nodes}
    after = {n.name: n for n in new.nodes}
    for name, node in after.items():
        prev = before.get(name)
        if prev is None:
            out.added.append(node)
            out.applied.append(f"node {name} added: connecting")
        elif prev != node:
            moved = [k for k in RECONNECT if getattr(prev, k) != getattr(node, k)]
            other = [k for k in NodeConfig.__struct_fields__ if k not in RECONNECT
                     and k not in AT_RUNNER_START and getattr(prev, k) != getattr(node, k)]
            later = [k for k in AT_RUNNER_START if getattr(prev, k) != getattr(node, k)]
            if moved:
                out.reconnect.append(node)
                shown = dict.fromkeys("jump" if k == "hops" else k for k in moved)
                out.applied.append(f"node {name} {', '.join(shown)} changed: reconnecting")
            if other or later:
                out.updated.append(node)
            if other:
                out.applied.append(f"node {name} {', '.join(other)} changed: applied")
            if later:
                out.applied.append(f"node {name} {', '.join(later)} changed: its runner "
                                   f"gets it when it starts (`nvq node restart {name}`)")
    for name in before:
        if name not in after:
            out.removed.append(name)
            out.applied.append(
                f"node {name} removed: draining (its running jobs finish, then it goes)")
    if kept:
        out.config = msgspec.structs.replace(new, **kept)
    return out


def _clusters(old: Config, new: Config, out: ConfigChanges) -> list[Any] | None:
    """Changed `[[clusters]]` tables apply (the pilot managers take them); a cluster
    added or removed needs a restart: the list kept then, else None."""
    before = {c.name: c for c in old.clusters}
    after = {c.name: c for c in new.clusters}
    if before.keys() != after.keys():
        out.refused.append(
            "[clusters] a cluster added or removed: needs a daemon restart (kept as it was)"
        )
        return list(old.clusters)
    for name, cluster in after.items():
        prev = before[name]
        if prev != cluster:
            out.applied.append(_cluster_applied(prev, cluster))
    return None


def _cluster_applied(prev: ClusterConfig, cluster: ClusterConfig) -> str:
    keys = [k for k in type(cluster).__struct_fields__ if getattr(prev, k) != getattr(cluster, k)]
    return (
        f"cluster {cluster.name} {', '.join(keys)} changed: applied to its next pilots "
        "(requests resume)"
    )


def cluster_retry(old: Config, new: Config, name: str) -> tuple[ClusterConfig | None, str]:
    """`nvq cluster retry NAME` with config.toml read again: the cluster's table to
    apply (None: keep the running one) and the one line that says what was done. Only
    this cluster's table is taken; the rest of the file waits for `daemon reload`."""
    prev = next(c for c in old.clusters if c.name == name)
    cluster = next((c for c in new.clusters if c.name == name), None)
    if cluster is None:
        return None, (
            f"cluster {name} is no longer in config.toml (removing it needs a daemon "
            "restart): requests resume with the running table"
        )
    if cluster == prev:
        return None, f"cluster {name}: config.toml unchanged: requests resume"
    return cluster, _cluster_applied(prev, cluster)
