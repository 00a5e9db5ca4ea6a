"""Tailing a big log: read from the end, capped, and the cut said in the output."""

from __future__ import annotations

from pathlib import Path

from nvq_runner.protocol import JobExited, LogData, Tail
from nvq_runner.tail import STEP, tail_start
from tests.cluster import Nvq
from tests.runner.test_live import Client, Node, job


def read_tail(c: Client, req: int) -> bytes:
    data = b""
    while not (m := c.expect(LogData, req=req)).eof:
        data += m.data
    assert m.error is None
    return data


def test_tail_start_counts_lines_across_steps(tmp_path: Path) -> None:
    log = tmp_path / "log"
    lines = [b"x" * (STEP // 3 + i) for i in range(20)]
    log.write_bytes(b"\n".join(lines) + b"\n")
    whole = log.read_bytes()
    for n in (1, 2, 3, 7, 19):
        start, cut = tail_start(log, n, 0)
        assert whole[start:] == b"\n".join(lines[-n:]) + b"\n" and not cut
    assert tail_start(log, 50, 0) == (0, False)
    start, cut = tail_start(log, 50, 100)
    assert (start, cut) == (len(whole) - 100, True)
    assert tail_start(log, 1, 10 * STEP)[1] is False


def test_long_log_without_newlines_is_cut_and_says_so(node: Node) -> None:
    node.start()
    c, _ = node.hello()
    c.send(job(1, "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo last"))
    c.expect(JobExited, job_id=1)
    c.send(Tail(req=1, job_id=1, lines=3, max_bytes=1000))
    data = read_tail(c, 1)
    assert data == b"[nvq: output cut to the last 1000 bytes]\n" + b"x" * 994 + b"\nlast\n"
    c.send(Tail(req=2, job_id=1, lines=1, max_bytes=1000))
    assert read_tail(c, 2) == b"last\n"  # within the cap: nothing to say


def test_job_logs_of_a_huge_log_show_its_last_8_mib(nvq: Nvq) -> None:
    j = nvq.submit("--", "sh", "-c", "head -c 20000000 /dev/zero | tr '\\0' y")
    nvq.wait(j["id"])
    out = nvq.ok("job", "logs", str(j["id"])).out
    head, _, rest = out.partition("\n")
    assert head == "[nvq: output cut to the last 8 MiB]"
    assert rest == "y" * (8 << 20)
