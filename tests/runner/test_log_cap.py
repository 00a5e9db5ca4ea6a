"""A job's log is kept under Start.max_log_size: its head and newest output stay."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvq_runner.logcap import cut_log, cut_records, marker
from nvq_runner.order_records import RECORD, parse_records
from nvq_runner.protocol import JobExited
from tests.runner.test_live import Node, job


def test_cut_keeps_head_and_newest(tmp_path: Path) -> None:
    log = tmp_path / "stdout.log"
    log.write_bytes(b"".join(b"%06d\n" % i for i in range(10000)))  # 70000 bytes
    assert not cut_log(log, 70000)
    assert cut_log(log, 40000)
    data = log.read_bytes()
    assert len(data) <= 40000
    assert data.startswith(b"000000\n000001\n")
    assert data.endswith(b"009998\n009999\n")
    assert marker(40000) in data and b"005000\n" not in data


@pytest.fixture
def node_fast_checks(node: Node) -> Node:
    node.env = {**node.env, "NVQ_LOG_CHECK_INTERVAL": "0.2"}
    return node


def test_a_chatty_job_cannot_fill_the_disk(node_fast_checks: Node) -> None:
    node = node_fast_checks
    node.start()
    c, _ = node.hello()
    cap = 200_000
    c.send(job(1, "for r in 1 2 3; do seq 1 40000; sleep 1; done; echo the-end",
               max_log_size=cap))
    exited = c.expect(JobExited, job_id=1, timeout=30)
    assert exited.exit_code == 0 and exited.log_truncated
    data = (node.home / "jobs" / "1" / "stdout.log").read_bytes()
    assert len(data) <= cap
    assert data.startswith(b"1\n2\n3\n") and data.endswith(b"40000\nthe-end\n")
    assert b"[nvq: output cut here to keep the log under 195.3 KiB]" in data

    c.send(job(2, "seq 1 1000", max_log_size=cap))
    quiet = c.expect(JobExited, job_id=2)
    assert not quiet.log_truncated
    assert (node.home / "jobs" / "2" / "stdout.log").read_bytes().endswith(b"999\n1000\n")


def test_the_write_order_record_is_cut_in_whole_records(tmp_path: Path) -> None:
    path = tmp_path / "order-1.log"
    path.write_bytes(b"".join(RECORD.pack(b"o", i, i) for i in range(1, 10001)))  # 170,000 B
    assert not cut_records(path, 170_000, RECORD.size)
    assert cut_records(path, 100_000, RECORD.size)
    data = path.read_bytes()
    assert len(data) <= 100_000 and len(data) % RECORD.size == 0
    ends = [end for _, end in parse_records(data)]
    assert ends[:2] == [1, 2] and ends[-2:] == [9999, 10000]
    assert ends == sorted(ends) and 5000 not in ends
