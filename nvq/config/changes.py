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
from nvq.values import format_mib

# [queue] keys as config.toml names them, where the struct's name differs.
QUEUE_NAMES = {"headroom_mb": "headroom", "artifacts_quota_mb": "artifacts_quota"}
# [queue] keys given as durations, and as sizes in bytes, in config.toml.
DURATIONS = frozenset({
    "kill_grace", "node_grace", "lease", "max_downtime", "ssh_keepalive",
    "ssh_connect_timeout", "starvation_after", "interactive_idle", "interactive_grace",
    "artifact_sync", "busy_idle", "fair_share_halflife"})
BYTE_SIZES = frozenset({"max_result", "max_log_size", "max_log_tail"})

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


def duration_text(seconds: float) -> str:
    """As config.toml would say it: 30s, 2m, 1h30m, 2.5s."""
    if seconds != int(seconds) or seconds < 60:
        return f"{seconds:g}s"
    out, rest = "", int(seconds)
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m"), (1, "s")):
        if rest >= size:
            out += f"{rest // size}{unit}"
            rest %= size
    return out


def queue_value(key: str, value: Any) -> str:
    """A [queue] value in config.toml's words and units."""
    if key == "lease" and value is None:
        return "derived from node_grace"
    if key == "lease" and value == 0:
        return '"off"'
    if value is None or isinstance(value, bool):
        return _show(value)
    if key in DURATIONS:
        return duration_text(float(value))
    if key in QUEUE_NAMES:
        return format_mib(int(value))
    if key in BYTE_SIZES:
        return format_mib(int(value) // 1024**2) if value % 1024**2 == 0 else f"{value} bytes"
    return _show(value)


def _fields_changed(old: Any, new: Any) -> list[str]:
    """The names of a section's keys that differ ([users]: the users). Values are not
    shown: a notify URL or a token may be secret."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [k for k in dict.fromkeys([*old, *new]) if old.get(k) != new.get(k)]
    if isinstance(old, msgspec.Struct) and type(old) is type(new):
        return [k for k in type(old).__struct_fields__ if getattr(old, k) != getattr(new, k)]
    return []


def diff(old: Config, new: Config) -> ConfigChanges:
    out = ConfigChanges(config=new)
    queue_kept: dict[str, Any] = {}
    for key in QueueConfig.__struct_fields__:
        was, now = getattr(old.queue, key), getattr(new.queue, key)
        if was == now:
            continue
        name = QUEUE_NAMES.get(key, key)
        if key in RESTART_QUEUE:
            queue_kept[key] = was
            out.refused.append(f"[queue] {name} changed: needs a daemon restart (running "
                               f"with {queue_value(key, was)})")
        else:
            out.applied.append(
                f"[queue] {name}: {queue_value(key, was)} -> {queue_value(key, now)}")
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
        was, now = getattr(old, section), getattr(new, section)
        if was == now:
            continue
        what = ", ".join(_fields_changed(was, now)) or "table"
        out.applied.append(f"[{section}] {what} changed: applied")
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
