"""The attempt record is rewritten in place after its first write (no new inode per
update), stays readable, and replaces a record an older runner wrote."""

from __future__ import annotations

from pathlib import Path

from nvq_runner.jobfiles import RECORD_SIZE, AttemptRecord, JobDir, _enc


def _record(**kw: object) -> AttemptRecord:
    base: dict[str, object] = dict(job_id=7, attempt=1, started_at=1.5, kill_grace=10.0,
                                   boot_id="b" * 36)
    return AttemptRecord(**{**base, **kw})  # type: ignore[arg-type]


def test_updates_rewrite_the_same_file(tmp_path: Path) -> None:
    d = JobDir(tmp_path, 7)
    d.path.mkdir()
    d.write_record(_record())
    inode = d.attempt_json.stat().st_ino
    d.write_record(_record(pid=1234, start_ticks=99))
    d.write_record(_record(pid=1234, start_ticks=99, done=True, kill_reason="timeout"))
    assert d.attempt_json.stat().st_ino == inode
    assert d.attempt_json.stat().st_size == RECORD_SIZE
    assert d.read_record() == _record(pid=1234, start_ticks=99, done=True, kill_reason="timeout")


def test_an_older_runners_record_is_replaced_whole(tmp_path: Path) -> None:
    d = JobDir(tmp_path, 7)
    d.path.mkdir()
    old = _enc.encode(_record(kill_reason="killed" * 100))  # longer than a sector
    d.attempt_json.write_bytes(old)
    d.write_record(_record(done=True))
    assert d.read_record() == _record(done=True)
    assert d.attempt_json.stat().st_size == RECORD_SIZE


def test_a_record_longer_than_a_sector_is_still_written(tmp_path: Path) -> None:
    d = JobDir(tmp_path, 7)
    d.path.mkdir()
    d.write_record(_record())
    long = _record(queue_id="q" * 400)
    d.write_record(long)
    assert d.read_record() == long
    d.write_record(_record(done=True))
    assert d.read_record() == _record(done=True)

