"""The runner calls a job's SIGKILL an OOM kill only on its memory cgroup's word: the
`oom_kill` counter of `memory.events` (cgroup v2). The cgroup root is a directory of
the test's own here, laid out as the kernel lays it out."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvq_runner import memlimit


def test_the_oom_kill_counter_of_the_jobs_cgroup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memlimit, "_own_cgroup", lambda: tmp_path)
    group = tmp_path / "nvq-7-1"
    group.mkdir()
    (group / "memory.events").write_text(
        "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n"
    )
    assert memlimit.oom_kills("nvq-7-1") == 1
    (group / "memory.events").write_text("low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n")
    assert memlimit.oom_kills("nvq-7-1") == 0
    assert memlimit.oom_kills("nvq-8-1") == 0  # no cgroup of its own: no evidence


def test_no_cgroup_v2_means_no_oom_claim(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memlimit, "_own_cgroup", lambda: None)
    assert memlimit.oom_kills("nvq-7-1") == 0
