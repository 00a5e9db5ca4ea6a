"""`nvq cluster` on a queue without Slurm clusters: one line that says so."""

from __future__ import annotations

from tests.cluster import Nvq


def test_cluster_commands_without_clusters_say_there_are_none(nvq: Nvq) -> None:
    for args in (("status",), ("scale", "hpc", "2"), ("drain", "hpc"), ("retry", "hpc")):
        r = nvq.run("cluster", *args)
        assert r.code == 1, r
        assert r.err.strip() == "nvq: no [[clusters]] in config.toml"
    bad = nvq.run("cluster", "scale", "hpc", "many")
    assert bad.code == 2 and "expected a number or `auto`" in bad.err
