"""`nvq daemon reload` speaks config.toml: its names and units (`node_grace: 30s ->
45s`, `headroom: 512MiB -> 1GiB`), what changed in a section (`[notify] severity
changed`), and a change that needs a restart stays in `queue status`, on its first
lines, until the daemon has restarted."""

from __future__ import annotations

from tests.cluster import Nvq


def test_reload_says_what_changed_and_status_keeps_what_waits(nvq: Nvq) -> None:
    config = nvq.home / "config.toml"
    config.write_text('[queue]\nnode_grace = "30s"\nheadroom = "512MiB"\n'
                      '[notify]\nseverity = "error"\n')
    nvq.ok("queue", "status")
    config.write_text('[queue]\nnode_grace = "45s"\nheadroom = "1GiB"\nlocal_node_name = "box"\n'
                      '[notify]\nseverity = "warning"\n')
    said = nvq.ok("daemon", "reload").out.splitlines()
    assert said == [
        "applied: [queue] headroom: 512MiB -> 1GiB",
        "applied: [queue] node_grace: 30s -> 45s",
        "applied: [notify] severity changed: applied",
        "not applied: [queue] local_node_name changed: needs a daemon restart (running "
        "with 'local')",
    ], said
    status = nvq.json("queue", "status")
    assert status["config_changed"] is True
    assert status["needs_restart"] == [
        "[queue] local_node_name changed: needs a daemon restart (running with 'local')"]
    text = nvq.ok("queue", "status").out.splitlines()
    assert text[0] == ("config.toml: [queue] local_node_name changed: needs a daemon "
                       "restart (running with 'local')"), text
    # Until a restart: then the daemon runs the file as it is.
    nvq.ok("daemon", "stop")
    nvq.ok("daemon", "start")
    status = nvq.json("queue", "status")
    assert status["needs_restart"] == [] and status["config_changed"] is False
    assert not nvq.ok("queue", "status").out.startswith("config.toml")
