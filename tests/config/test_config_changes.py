"""What a reload changes (`nvq.config.changes.diff`) and `node add`'s append
(`nvq.config.append`): pure, on configs parsed from text."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from nvq.config import ConfigError
from nvq.config.append import append_node
from nvq.config.changes import diff
from nvq.config.reader import parse_config
from nvq.config.types import Config


def _config(text: str) -> Config:
    return parse_config(tomllib.loads(text), Path("config.toml"))


BASE = """
[queue]
local_node = false
node_grace = "2m"
[[nodes]]
name = "a"
host = "a.lab"
[[nodes]]
name = "b"
host = "b.lab"
gpus = [0, 1]
"""


def test_nodes_added_removed_reconnected_or_updated() -> None:
    new = BASE.replace('host = "a.lab"', 'host = "a2.lab"').replace("[0, 1]", "[0]")
    new = new.replace('name = "b"', 'name = "c"') + '[limits]\nmax_running_gpus = 2\n'
    ch = diff(_config(BASE), _config(new))
    assert [n.name for n in ch.added] == ["c"] and ch.removed == ["b"]
    assert [n.name for n in ch.reconnect] == ["a"] and ch.updated == []
    assert ch.applied == [
        "[limits] defaults changed: applied",
        "node a host changed: reconnecting",
        "node c added: connecting",
        "node b removed: draining (its running jobs finish, then it goes)",
    ]
    assert ch.config == _config(new) and ch.refused == []
    cards = diff(_config(BASE), _config(BASE.replace("[0, 1]", "[1]")))
    assert [n.gpus for n in cards.updated] == [[1]] and cards.reconnect == []
    assert cards.applied == ["node b gpus changed: applied"]


def test_what_needs_a_restart_is_refused_and_kept() -> None:
    new = BASE.replace("local_node = false", "local_node = true").replace('"2m"', '"30s"')
    ch = diff(_config(BASE), _config(new))
    assert ch.refused == [
        "[queue] local_node changed: needs a daemon restart (running with false)"]
    assert ch.applied == ["[queue] node_grace: 2m -> 30s"]
    assert ch.config.queue.local_node is False and ch.config.queue.node_grace == 30.0
    assert diff(_config(BASE), _config(BASE)).applied == []


CLUSTER = """
[[clusters]]
name = "hpc"
host = "login.hpc"
partition = "nosuch"
"""


def test_a_changed_cluster_applies_and_one_added_or_removed_needs_a_restart() -> None:
    old = _config(BASE + CLUSTER)
    fixed = _config(BASE + CLUSTER.replace("nosuch", "gpu"))
    ch = diff(old, fixed)
    assert ch.applied == [
        "cluster hpc partition changed: applied to its next pilots (requests resume)"
    ]
    assert ch.refused == [] and ch.config.clusters == fixed.clusters
    more = _config(BASE + CLUSTER + CLUSTER.replace('"hpc"', '"hpc2"'))
    added = diff(old, more)
    assert added.refused == [
        "[clusters] a cluster added or removed: needs a daemon restart (kept as it was)"
    ]
    assert added.config.clusters == old.clusters


def test_node_add_appends_a_checked_table(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("# keep me\n" + BASE)
    table = append_node(path, "g", {"host": "g.lab", "port": 2222, "user": None},
                        {"CUDA_CACHE_PATH": "/scratch"})
    assert table == ('[[nodes]]\nname = "g"\nhost = "g.lab"\nport = 2222\n'
                     '[nodes.env]\n"CUDA_CACHE_PATH" = "/scratch"\n')
    text = path.read_text()
    assert text.startswith("# keep me\n" + BASE) and text.endswith(table)
    assert [n.name for n in _config(text).nodes] == ["a", "b", "g"]
    with pytest.raises(ConfigError, match="already there"):
        append_node(path, "g", {"host": "x"}, {})
    with pytest.raises(ConfigError):
        append_node(path, "h", {"host": "h.lab", "port": 0}, {})
    assert path.read_text() == text  # refused: nothing written


JUMPS = """
[queue]
local_node = false
[[nodes]]
name = "gw"
host = "gw.lab"
user = "me"
identity = "/keys/gw"
[[nodes]]
name = "inner"
host = "10.0.0.5"
jump = "gw"
[[nodes]]
name = "deep"
host = "10.0.0.6"
identity = "/keys/deep"
jump = "ops@b1.lab:2222,b2"
"""


def test_jumps_resolve_to_hops() -> None:
    gw, inner, deep = _config(JUMPS).nodes
    assert gw.hops == []
    (hop,) = inner.hops
    assert (hop.host, hop.port, hop.user, hop.identity) == ("gw.lab", 22, "me", "/keys/gw")
    assert [(h.user, h.host, h.port, h.identity) for h in deep.hops] == [
        ("ops", "b1.lab", 2222, "/keys/deep"), (None, "b2", 22, "/keys/deep")]
    with pytest.raises(ConfigError, match=r"nodes\[1\]\.jump: jumps go round in a loop"):
        _config(JUMPS.replace('jump = "gw"', 'jump = "inner"'))
    with pytest.raises(ConfigError, match="is not user@host:port nor a node's name"):
        _config(JUMPS.replace('jump = "gw"', 'jump = "no such"'))
    moved = diff(_config(JUMPS), _config(JUMPS.replace('host = "gw.lab"', 'host = "gw2"')))
    assert "node inner jump changed: reconnecting" in moved.applied


def test_the_remote_cli_takes_one_hop() -> None:
    remote = _config('[remote]\nhost = "q"\njump = "me@gw:2222"\n').remote
    assert remote is not None and remote.jump == "me@gw:2222"
    with pytest.raises(ConfigError, match=r"remote\.jump: one hop only"):
        _config('[remote]\nhost = "q"\njump = "me@gw,other"\n')


def test_reload_lines_speak_config_toml() -> None:
    old = _config('[queue]\nnode_grace = "30s"\nheadroom = "512MiB"\nlocal_node_name = "x"\n'
                  '[notify]\nseverity = "error"\n')
    new = _config('[queue]\nnode_grace = "45s"\nheadroom = "1GiB"\nlocal_node_name = "y"\n'
                  'max_result = "2MiB"\nlease = "off"\nmax_downtime = "90m"\n'
                  '[notify]\nseverity = "warning"\nwebhook = { url = "https://h/t0ken" }\n')
    ch = diff(old, new)
    assert ch.applied == [
        "[queue] headroom: 512MiB -> 1GiB",
        "[queue] node_grace: 30s -> 45s",
        '[queue] lease: derived from node_grace -> "off"',
        "[queue] max_downtime: 1h -> 1h30m",
        "[queue] max_result: 1MiB -> 2MiB",
        "[notify] webhooks, severity changed: applied",  # names only: a URL may be secret
    ]
    assert ch.refused == [
        "[queue] local_node_name changed: needs a daemon restart (running with 'x')"]
