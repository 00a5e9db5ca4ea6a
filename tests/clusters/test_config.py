"""`[[clusters]]` tables: every key, defaults, and the errors a user sees."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from nvq.clusters.config import ClusterConfig, parse_clusters
from nvq.config import ConfigError

PATH = Path("/home/u/.nvq/config.toml")


def parse(text: str, taken: tuple[str, ...] = ()) -> list[ClusterConfig]:
    return parse_clusters(tomllib.loads(text).get("clusters", []), PATH, taken)


def error(text: str, taken: tuple[str, ...] = ()) -> str:
    with pytest.raises(ConfigError) as info:
        parse(text, taken)
    return str(info.value)


def test_every_key() -> None:
    [c] = parse(
        """
        [[clusters]]
        name = "hpc"
        host = "login.hpc.example.org"
        port = 2222
        user = "alice"
        identity = "/keys/id_ed25519"
        known_hosts = "/keys/known_hosts"
        partition = "gpu"
        gpus_per_pilot = 4
        cpus = 32
        memory = "256GiB"
        time = "8h"
        account = "lab-42"
        qos = "normal"
        sbatch_args = ["--constraint=a100", "--exclusive"]
        min_pilots = 1
        max_pilots = 3
        scale_after = "1m"
        idle_release = "15m"
        python = "~/venvs/nvq/bin/python"
        env = { HF_HOME = "/scratch/hf" }
        setup = ["module load cuda/12.4", "module load python"]
        allow_untimed = true
        vacate_before = "10m"
        home = "/scratch/alice/nvq"
        """
    )
    assert c == ClusterConfig(
        name="hpc",
        host="login.hpc.example.org",
        port=2222,
        user="alice",
        identity="/keys/id_ed25519",
        known_hosts="/keys/known_hosts",
        partition="gpu",
        gpus_per_pilot=4,
        cpus=32,
        memory_mb=256 * 1024,
        time=8 * 3600.0,
        account="lab-42",
        qos="normal",
        sbatch_args=["--constraint=a100", "--exclusive"],
        min_pilots=1,
        max_pilots=3,
        scale_after=60.0,
        idle_release=900.0,
        python="~/venvs/nvq/bin/python",
        env={"HF_HOME": "/scratch/hf"},
        setup=["module load cuda/12.4", "module load python"],
        allow_untimed=True,
        vacate_before=600.0,
        home="/scratch/alice/nvq",
    )


def test_defaults_and_a_single_setup_line() -> None:
    [c] = parse('[[clusters]]\nname = "hpc"\nhost = "login"\nsetup = "module load cuda"\n')
    assert c.setup == ["module load cuda"]
    assert (c.port, c.gpus_per_pilot, c.min_pilots, c.max_pilots) == (22, 1, 0, 1)
    assert (c.scale_after, c.idle_release, c.vacate_before) == (30.0, 600.0, 300.0)
    assert (c.time, c.partition, c.allow_untimed, c.python) == (None, None, False, "python3")


def test_identity_expands_here_but_home_and_python_stay_for_the_cluster() -> None:
    [c] = parse(
        '[[clusters]]\nname = "hpc"\nhost = "h"\nidentity = "~/.ssh/id"\n'
        'home = "~/nvq"\npython = "~/py"\n'
    )
    assert c.identity is not None and not c.identity.startswith("~")
    assert (c.home, c.python) == ("~/nvq", "~/py")


def test_no_clusters() -> None:
    assert parse("") == []


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('host = "h"', "clusters[0].name: missing (every cluster needs a name and its login"),
        ('name = "hpc"', "clusters[0].host: missing"),
        (
            'name = "hpc"\nhost = "h"\nnodes = 3',
            "clusters[0].nodes: unknown key (known keys: account, allow_untimed,",
        ),
        ('name = "a/b"\nhost = "h"', 'clusters[0].name: invalid cluster name "a/b"'),
        (
            'name = "hpc"\nhost = "h"\nport = 0',
            "clusters[0].port: expected an integer from 1 to 65535, got 0",
        ),
        (
            'name = "hpc"\nhost = "h"\nmax_pilots = 0',
            "clusters[0].max_pilots: expected an integer >= 1, got 0",
        ),
        (
            'name = "hpc"\nhost = "h"\ngpus_per_pilot = -1',
            "clusters[0].gpus_per_pilot: expected an integer >= 0, got -1",
        ),
        (
            'name = "hpc"\nhost = "h"\nmin_pilots = 3\nmax_pilots = 2',
            "clusters[0].min_pilots: 3 is more than max_pilots (2)",
        ),
        (
            'name = "hpc"\nhost = "h"\ntime = "eight hours"',
            "clusters[0].time: invalid duration 'eight hours'",
        ),
        (
            'name = "hpc"\nhost = "h"\ntime = "30s"',
            "clusters[0].time: a pilot's walltime must be at least 1m",
        ),
        (
            'name = "hpc"\nhost = "h"\ntime = "10m"\nvacate_before = "10m"',
            "clusters[0].vacate_before: must be shorter than the pilot's walltime",
        ),
        (
            'name = "hpc"\nhost = "h"\nmemory = "64GB"',
            "clusters[0].memory: invalid size '64GB': units are binary, write 64GiB",
        ),
        (
            'name = "hpc"\nhost = "h"\nmemory = 0',
            "clusters[0].memory: must be more than 0",
        ),
        (
            'name = "hpc"\nhost = "h"\nallow_untimed = "yes"',
            'clusters[0].allow_untimed: expected true or false, got "yes"',
        ),
        (
            'name = "hpc"\nhost = "h"\nsbatch_args = "--exclusive"',
            'clusters[0].sbatch_args: expected a list of strings, got "--exclusive"',
        ),
        (
            'name = "hpc"\nhost = "h"\nenv = { "A B" = "1" }',
            "clusters[0].env: invalid variable name \"A B\": use letters, digits and '_'",
        ),
        (
            'name = "hpc"\nhost = "h"\nenv = { A = 1 }',
            "clusters[0].env.A: expected a string, got 1",
        ),
        (
            'name = "hpc"\nhost = "h"\nsetup = [""]',
            'clusters[0].setup[0]: expected a non-empty string, got ""',
        ),
    ],
)
def test_errors_name_the_file_and_key(body: str, message: str) -> None:
    assert error(f"[[clusters]]\n{body}\n").startswith(f"{PATH}: {message}")


def test_names_are_unique_among_clusters_and_nodes() -> None:
    two = '[[clusters]]\nname = "hpc"\nhost = "a"\n[[clusters]]\nname = "hpc"\nhost = "b"\n'
    assert error(two) == f'{PATH}: clusters[1].name: "hpc" is already the name of clusters[0]'
    one = '[[clusters]]\nname = "gpu1"\nhost = "a"\n'
    assert error(one, ("gpu1",)) == f'{PATH}: clusters[0].name: "gpu1" is already a node\'s name'


def test_clusters_must_be_tables() -> None:
    with pytest.raises(ConfigError, match="clusters: expected"):
        parse_clusters({"name": "hpc"}, PATH)
