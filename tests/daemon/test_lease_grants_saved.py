"""The saved lease grants (nvq.daemon.machines.lease_grants.merged): a save made before a Slurm
pilot is adopted keeps that pilot's grant while it lasts, so the pilot, added later,
still finds what an earlier daemon promised its runner."""

from __future__ import annotations

import json

from nvq.daemon.machines.lease_grants import merged


def test_a_node_not_yet_held_keeps_its_grant_while_it_lasts() -> None:
    stored = json.dumps({"hpc/7": (5000.0, 3600.0), "hpc/3": (900.0, 98.0), "n0": (1.0, 1.0)})
    doc = {"n0": (1200.0, 98.0)}
    out = merged(stored, doc, present={"n0"}, now=1000.0)
    assert out == {"hpc/7": (5000.0, 3600.0), "n0": (1200.0, 98.0)}  # hpc/3 ran out
    assert merged(None, doc, present={"n0"}, now=1000.0) == doc
