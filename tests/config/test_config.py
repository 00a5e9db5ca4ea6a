"""config.toml → Config, and the one-line errors that name the file and the key."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec
import pytest

from nvq.config import (
    Config,
    ConfigError,
    NodeConfig,
    QueueConfig,
    RemoteConfig,
    load_config,
    parse_config,
)

GOOD = """
[queue]
local_node = true
local_node_name = "ws"
local_home = "/scratch/nvq"
local_gpus = [0, 1]
local_env = { HF_HOME = "/scratch/hf" }
headroom = "1GiB"
max_cpu_jobs_per_node = 2
kill_grace = "30s"
node_grace = "5m"

[[nodes]]
name = "box406"
host = "box406.lab"
port = 2222
user = "me"
identity = "~/.ssh/id_ed25519"
known_hosts = "~/.ssh/lab_hosts"
home = "~/.nvq-node"
python = "/opt/py/bin/python3"
gpus = [0, 1, 2, 3]
env = { CUDA_CACHE_PATH = "/scratch/cuda" }
owner = "alice"

[[nodes]]
name = "box407"
host = "box407.lab"

[remote]
host = "queue.lab"
user = "me"
"""


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "config.toml").write_text(text)
    return tmp_path / "config.toml"


def test_good_config(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    config = load_config(tmp_path)
    assert config.read_stamp is not None  # `queue status` tells a later change by it
    config = msgspec.structs.replace(config, read_stamp=None)
    home = os.path.expanduser("~")
    assert config == Config(
        path=path,
        queue=QueueConfig(
            local_node=True,
            local_node_name="ws",
            local_home="/scratch/nvq",
            local_gpus=[0, 1],
            local_env={"HF_HOME": "/scratch/hf"},
            headroom_mb=1024,
            max_cpu_jobs_per_node=2,
            kill_grace=30.0,
            node_grace=300.0,
        ),
        nodes=[
            NodeConfig(
                name="box406",
                host="box406.lab",
                port=2222,
                user="me",
                identity=f"{home}/.ssh/id_ed25519",
                known_hosts=f"{home}/.ssh/lab_hosts",
                home="~/.nvq-node",  # a path on the node: left for the node to expand
                python="/opt/py/bin/python3",
                gpus=[0, 1, 2, 3],
                env={"CUDA_CACHE_PATH": "/scratch/cuda"},
                owner="alice",
            ),
            NodeConfig(name="box407", host="box407.lab"),
        ],
        remote=RemoteConfig(host="queue.lab", user="me"),
    )


def test_missing_file_gives_defaults_with_path(tmp_path: Path) -> None:
    config = load_config(tmp_path)
    assert config == Config(path=tmp_path / "config.toml")
    assert config.queue.headroom_mb == 512
    assert config.nodes == []
    assert config.remote is None


def test_empty_file_gives_defaults(tmp_path: Path) -> None:
    write(tmp_path, "")
    read = load_config(tmp_path)
    assert msgspec.structs.replace(read, read_stamp=None) == Config(path=tmp_path / "config.toml")


def test_numbers_for_sizes_and_durations(tmp_path: Path) -> None:
    write(tmp_path, "[queue]\nheadroom = 256\nkill_grace = 2.5\nnode_grace = 60\n")
    queue = load_config(tmp_path).queue
    assert (queue.headroom_mb, queue.kill_grace, queue.node_grace) == (256, 2.5, 60.0)


def test_local_node_off_frees_its_name(tmp_path: Path) -> None:
    write(tmp_path, '[queue]\nlocal_node = false\n[[nodes]]\nname = "local"\nhost = "h"\n')
    assert load_config(tmp_path).nodes[0].name == "local"


def test_empty_gpu_allowlist_means_cpu_only(tmp_path: Path) -> None:
    write(tmp_path, '[[nodes]]\nname = "a"\nhost = "h"\ngpus = []\n')
    assert load_config(tmp_path).nodes[0].gpus == []


P = "/etc/nvq/config.toml"


def node(**fields: Any) -> dict[str, Any]:
    return {"name": "a", "host": "h", **fields}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        # unknown keys, at every level
        ({"quue": {}}, "quue: unknown key"),
        ({"queue": {"headroom_mb": 5}}, "queue.headroom_mb: unknown key"),
        ({"nodes": [node(hots="x")]}, "nodes[0].hots: unknown key"),
        ({"remote": {"host": "q", "x": 1}}, "remote.x: unknown key"),
        # section shapes
        ({"queue": 3}, "queue: expected a table, got 3"),
        ({"nodes": {"name": "a"}}, "nodes: expected [[nodes]] tables, got a table"),
        ({"nodes": ["a"]}, 'nodes[0]: expected a table, got "a"'),
        # [queue] values
        ({"queue": {"local_node": "yes"}}, 'queue.local_node: expected true or false, got "yes"'),
        (
            {"queue": {"local_node_name": ""}},
            'queue.local_node_name: expected a non-empty string, got ""',
        ),
        ({"queue": {"local_node_name": "a:b"}}, 'queue.local_node_name: invalid node name "a:b"'),
        ({"queue": {"local_home": 3}}, "queue.local_home: expected a non-empty string, got 3"),
        (
            {"queue": {"local_gpus": 0}},
            "queue.local_gpus: expected a list of GPU indices like [0, 1], got 0",
        ),
        (
            {"queue": {"local_gpus": [0, -1]}},
            "queue.local_gpus[1]: expected an integer >= 0, got -1",
        ),
        ({"queue": {"local_gpus": [1, 1]}}, "queue.local_gpus: GPU indices repeat in [1, 1]"),
        ({"queue": {"local_env": {"A": 1}}}, "queue.local_env.A: expected a string, got 1"),
        (
            {"queue": {"local_env": "A=1"}},
            'queue.local_env: expected a table of strings, got "A=1"',
        ),
        (
            {"queue": {"headroom": "banana"}},
            "queue.headroom: invalid size 'banana': expected a number with a binary unit",
        ),
        ({"queue": {"headroom": "1GB"}}, "queue.headroom: invalid size '1GB': units are binary"),
        (
            {"queue": {"headroom": -1}},
            'queue.headroom: expected a size like "512MiB" or a number of MiB, got -1',
        ),
        ({"queue": {"headroom": True}}, "queue.headroom: expected a size"),
        (
            {"queue": {"max_cpu_jobs_per_node": -1}},
            "queue.max_cpu_jobs_per_node: expected an integer >= 0, got -1",
        ),
        (
            {"queue": {"max_cpu_jobs_per_node": 1.5}},
            "queue.max_cpu_jobs_per_node: expected an integer >= 0, got 1.5",
        ),
        ({"queue": {"kill_grace": "soon"}}, "queue.kill_grace: invalid duration 'soon'"),
        (
            {"queue": {"node_grace": [1]}},
            'queue.node_grace: expected a duration like "30s" or a number of seconds, got [1]',
        ),
        # [[nodes]] values
        ({"nodes": [{"host": "h"}]}, "nodes[0].name: missing"),
        ({"nodes": [{"name": "a"}]}, "nodes[0].host: missing"),
        (
            {"nodes": [node(), node(name="b"), node(port="abc")]},
            'nodes[2].port: expected an integer from 1 to 65535, got "abc"',
        ),
        ({"nodes": [node(port=0)]}, "nodes[0].port: expected an integer from 1 to 65535, got 0"),
        (
            {"nodes": [node(port=65536)]},
            "nodes[0].port: expected an integer from 1 to 65535, got 65536",
        ),
        (
            {"nodes": [node(port=True)]},
            "nodes[0].port: expected an integer from 1 to 65535, got true",
        ),
        ({"nodes": [node(name="my box")]}, 'nodes[0].name: invalid node name "my box"'),
        ({"nodes": [node(name=7)]}, "nodes[0].name: expected a non-empty string, got 7"),
        ({"nodes": [node(host="")]}, 'nodes[0].host: expected a non-empty string, got ""'),
        ({"nodes": [node(user=1)]}, "nodes[0].user: expected a non-empty string, got 1"),
        ({"nodes": [node(identity=[])]}, "nodes[0].identity: expected a non-empty string, got []"),
        (
            {"nodes": [node(known_hosts=False)]},
            "nodes[0].known_hosts: expected a non-empty string, got false",
        ),
        ({"nodes": [node(home={})]}, "nodes[0].home: expected a non-empty string, got a table"),
        ({"nodes": [node(python="")]}, "nodes[0].python: expected a non-empty string"),
        ({"nodes": [node(gpus=["0"])]}, 'nodes[0].gpus[0]: expected an integer >= 0, got "0"'),
        ({"nodes": [node(env={"X": True})]}, "nodes[0].env.X: expected a string, got true"),
        ({"nodes": [node(owner=5)]}, "nodes[0].owner: expected a non-empty string, got 5"),
        (
            {"nodes": [node(), node(host="h2")]},
            'nodes[1].name: "a" is already the name of nodes[0]',
        ),
        ({"nodes": [node(name="local")]}, 'nodes[0].name: "local" is the local node\'s name'),
        # [remote]
        ({"remote": {}}, "remote.host: missing"),
        (
            {"remote": {"host": "q", "port": "22"}},
            'remote.port: expected an integer from 1 to 65535, got "22"',
        ),
    ],
)
def test_errors_name_file_and_key(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(data, Path(P))
    text = str(info.value)
    assert text.startswith(f"{P}: {message}"), text
    assert "\n" not in text


def test_local_node_name_clash_respects_renamed_local(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nodes\[0\]\.name: \"ws\" is the local node's name"):
        parse_config({"queue": {"local_node_name": "ws"}, "nodes": [node(name="ws")]}, Path(P))


def test_long_values_are_shortened() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"nodes": [node(port="x" * 500)]}, Path(P))
    assert len(str(info.value)) < 200
    assert str(info.value).endswith('..."') or str(info.value).endswith("...")


def test_toml_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, '[queue]\nheadroom = "1GiB"\nmax_cpu_jobs_per_node = = 3\n')
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    text = str(info.value)
    assert text.startswith(f"{path}: line 3, column "), text
    assert "invalid TOML" in text
    assert "\n" not in text


def test_toml_error_at_end_of_document(tmp_path: Path) -> None:
    path = write(tmp_path, "[queue")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    assert str(info.value).startswith(f"{path}: ")
    assert "invalid TOML" in str(info.value)


def test_toml_type_errors_from_the_file_name_file_and_key(tmp_path: Path) -> None:
    path = write(tmp_path, '[[nodes]]\nname = "a"\nhost = "h"\nport = "ssh"\n')
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    assert str(info.value) == (
        f'{path}: nodes[0].port: expected an integer from 1 to 65535, got "ssh"'
    )


def test_non_utf8_file(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_bytes(b"[queue]\nlocal_home = '\xff'\n")
    with pytest.raises(ConfigError, match=r"config\.toml: not UTF-8"):
        load_config(tmp_path)


def test_unreadable_config_names_file(tmp_path: Path) -> None:
    (tmp_path / "config.toml").mkdir()
    with pytest.raises(ConfigError, match=r"config\.toml: cannot read"):
        load_config(tmp_path)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"queue": {"node_grace": "0"}},
            "queue.node_grace: invalid duration '0': must be more than 0",
        ),
        ({"queue": {"node_grace": 0}}, "queue.node_grace: invalid duration 0: must be more than 0"),
        (
            {"queue": {"artifact_sync": "0s"}},
            "queue.artifact_sync: invalid duration '0s': must be more than 0",
        ),
        (
            {"queue": {"kill_grace": "99999999999d"}},
            "queue.kill_grace: invalid duration '99999999999d': more than 100 years",
        ),
        (
            {"queue": {"kill_grace": float("nan")}},
            "queue.kill_grace: invalid duration NaN: expected a number of seconds",
        ),
        (
            {"queue": {"ssh_keepalive": float("inf")}},
            "queue.ssh_keepalive: invalid duration Infinity: more than 100 years",
        ),
        (
            {"queue": {"busy_idle": -5}},
            "queue.busy_idle: invalid duration -5: must not be negative",
        ),
        (
            {"queue": {"local_env": {"A=B": "x"}}},
            'queue.local_env: invalid variable name "A=B"',
        ),
        (
            {"queue": {"backup": {"interval_hours": float("nan")}}},
            "queue.backup.interval_hours: expected a positive number, got NaN",
        ),
        (
            {"notify": {"retry_initial": "1m", "retry_max": "30s"}},
            "notify.retry_max: less than notify.retry_initial (60s)",
        ),
        ({"notify": {"retry_initial": 0}}, "notify.retry_initial: invalid duration 0: must be"),
    ],
)
def test_values_that_make_no_sense_are_refused(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(data, Path(P))
    assert str(info.value).startswith(f"{P}: {message}"), str(info.value)


def test_zero_means_at_once_for_the_kill_grace_and_starvation() -> None:
    queue = parse_config({"queue": {"kill_grace": "0s", "starvation_after": 0}}, Path(P)).queue
    assert (queue.kill_grace, queue.starvation_after) == (0.0, 0.0)


def test_preemption_keys() -> None:
    data: dict[str, Any] = {
        "queue": {"preempt": False},
        "limits": {"max_preempt_priority": -1},
        "users": {"alice": {"max_preempt_priority": 10}},
    }
    config = parse_config(data, Path(P))
    assert config.queue.preempt is False
    assert config.limits.defaults.max_preempt_priority == -1
    assert config.users["alice"].limits.max_preempt_priority == 10
    assert parse_config({}, Path(P)).queue.preempt is True
    with pytest.raises(ConfigError, match="max_preempt_priority"):
        parse_config({"limits": {"max_preempt_priority": "high"}}, Path(P))
    with pytest.raises(ConfigError, match="preempt"):
        parse_config({"queue": {"preempt": "yes"}}, Path(P))
