"""Unit tests of the runner's journal, log tail and fake-GPU helpers (no processes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvq_runner.gpu.fake import parse_mib
from nvq_runner.gpu.nvml import cuda_version_text
from nvq_runner.journal import Journal
from nvq_runner.protocol import JobExited, JobLost, JobStarted
from nvq_runner.tail import start_of_last_lines


def started(seq: int, job: int = 1) -> JobStarted:
    return JobStarted(seq=seq, job_id=job, attempt=1, pid=100 + seq, started_at=1.0)


def test_append_and_reload(tmp_path: Path) -> None:
    j = Journal(tmp_path)
    for seq in range(1, 4):
        j.append(started(seq))
    j.close()
    j2 = Journal(tmp_path)
    assert j2.head == 3
    assert [e.seq for e in j2.unacked()] == [1, 2, 3]
    assert j2.unacked()[1] == started(2)


def test_out_of_order_append_refused(tmp_path: Path) -> None:
    j = Journal(tmp_path)
    with pytest.raises(ValueError):
        j.append(started(2))


def test_torn_last_record_is_dropped(tmp_path: Path) -> None:
    j = Journal(tmp_path)
    j.append(started(1))
    j.append(started(2))
    j.close()
    log = tmp_path / "events.log"
    data = log.read_bytes()
    log.write_bytes(data[:-3])  # crash mid-write of record 2
    j2 = Journal(tmp_path)
    assert [e.seq for e in j2.unacked()] == [1]
    assert j2.head == 1
    j2.append(started(2, job=7))  # the seq of the never-sent event is reused safely
    j2.close()
    assert [e.job_id for e in Journal(tmp_path).unacked()] == [1, 7]


def test_corrupt_record_stops_load(tmp_path: Path) -> None:
    j = Journal(tmp_path)
    j.append(started(1))
    j.append(started(2))
    j.close()
    log = tmp_path / "events.log"
    data = bytearray(log.read_bytes())
    data[-1] ^= 0xFF
    log.write_bytes(bytes(data))
    assert [e.seq for e in Journal(tmp_path).unacked()] == [1]


def test_ack_compacts_and_seq_never_repeats(tmp_path: Path) -> None:
    j = Journal(tmp_path)
    for seq in range(1, 6):
        j.append(started(seq))
    j.ack(3)
    assert [e.seq for e in j.unacked()] == [4, 5]
    j.ack(5)
    assert j.unacked() == []
    assert (tmp_path / "events.log").stat().st_size == 0
    j.close()
    j2 = Journal(tmp_path)
    assert j2.head == 5 and j2.next_seq() == 6 and j2.unacked() == []
    j2.append(JobLost(seq=6, job_id=1, attempt=1, reason="x", at=2.0))
    j2.close()
    j3 = Journal(tmp_path)
    assert [e.seq for e in j3.unacked()] == [6]


def test_meta_is_rewritten_in_place_and_an_older_one_is_read(tmp_path: Path) -> None:
    # an older runner's meta: replaced by rename, of any length
    (tmp_path / "meta.json").write_text('{"head": 41, "acked": 41, "x": "' + "y" * 200 + '"}')
    j = Journal(tmp_path)
    assert j.head == 41 and j.next_seq() == 42
    inode = (tmp_path / "meta.json").stat().st_ino
    for seq in (42, 43):
        j.append(started(seq))
        j.ack(seq)
    j.append(started(44))
    j.ack(44)
    j.close()
    meta = tmp_path / "meta.json"
    assert meta.stat().st_ino == inode  # no new inode per ack
    assert meta.stat().st_size == 96
    j2 = Journal(tmp_path)
    assert (j2.head, j2.acked, j2.unacked()) == (44, 44, [])


def test_partial_ack_survives_restart_without_rewrite(tmp_path: Path) -> None:
    j = Journal(tmp_path)
    for seq in range(1, 4):
        j.append(started(seq))
    j.ack(2)
    j.ack(1)  # stale acks are harmless
    j.close()
    # acks short of everything are not persisted: replaying them is harmless (the
    # daemon applies each seq once), so they only cost a little traffic
    assert [e.seq for e in Journal(tmp_path).unacked()][-1] == 3


def test_rewrite_when_many_acked_records_pile_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("nvq_runner.journal._REWRITE_AFTER", 3)
    j = Journal(tmp_path)
    for seq in range(1, 6):
        j.append(
            JobExited(
                seq=seq,
                job_id=seq,
                attempt=1,
                exit_code=0,
                signal=None,
                ended_at=1.0,
                reason="exit",
            )
        )
    j.ack(4)
    j.close()
    j2 = Journal(tmp_path)
    assert [e.seq for e in j2.unacked()] == [5]
    assert j2.head == 5


def test_start_of_last_lines(tmp_path: Path) -> None:
    f = tmp_path / "log"
    f.write_bytes(b"a\nbb\nccc\n")
    data = f.read_bytes()
    assert data[start_of_last_lines(f, 1) :] == b"ccc\n"
    assert data[start_of_last_lines(f, 2) :] == b"bb\nccc\n"
    assert data[start_of_last_lines(f, 10) :] == data
    assert data[start_of_last_lines(f, -1) :] == data
    assert data[start_of_last_lines(f, 0) :] == b""
    f.write_bytes(b"a\nbb\nccc")  # no trailing newline
    assert f.read_bytes()[start_of_last_lines(f, 2) :] == b"bb\nccc"
    big = b"".join(b"line %d\n" % i for i in range(100_000))
    f.write_bytes(big)
    assert big[start_of_last_lines(f, 3) :] == b"line 99997\nline 99998\nline 99999\n"
    assert start_of_last_lines(tmp_path / "missing", 5) == 0


def test_units_and_versions() -> None:
    assert parse_mib("80GiB") == 80 * 1024
    assert parse_mib("80G") == 80 * 1024
    assert parse_mib("512MiB") == 512
    assert parse_mib("2048") == 2048
    assert parse_mib(1000) == 1000
    assert parse_mib("1TiB") == 1024 * 1024
    assert parse_mib("2048KiB") == 2
    with pytest.raises(ValueError):
        parse_mib("10 parsecs")
    assert cuda_version_text(13000) == "13.0"
    assert cuda_version_text(12040) == "12.4"
