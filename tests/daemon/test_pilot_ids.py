"""The pilot ids a restarted daemon adopts: kept per cluster, private to the user."""

from __future__ import annotations

import stat
from pathlib import Path

from nvq.daemon.pilot_ids import PilotIds


def test_ids_are_kept_per_cluster_until_forgotten(tmp_path: Path) -> None:
    ids = PilotIds(tmp_path / "pilots.json")
    assert ids.load() == {}
    ids.add("hpc", "81234")
    ids.add("hpc", "81235")
    ids.add("hpc", "81234")  # twice is once
    ids.add("other", "7")
    assert PilotIds(tmp_path / "pilots.json").load() == {"hpc": ["81234", "81235"], "other": ["7"]}
    assert stat.S_IMODE((tmp_path / "pilots.json").stat().st_mode) == 0o600

    ids.forget("hpc", "81234")
    ids.forget("other", "7")
    ids.forget("hpc", "99")  # never recorded: nothing to do
    assert ids.load() == {"hpc": ["81235"]}


def test_an_unreadable_file_means_no_pilots_to_adopt(tmp_path: Path) -> None:
    path = tmp_path / "pilots.json"
    path.write_text("{not json")
    assert PilotIds(path).load() == {}
    path.write_text('["81234"]')
    assert PilotIds(path).load() == {}
