"""Nothing the runner sends may exceed the frame limit: a huge result.json stays on
the node, and oversized frames are split or shrunk where they are made."""

from __future__ import annotations

from nvq_runner.outframes import encode_frames
from nvq_runner.protocol import MAX_FRAME, FrameReader, JobExited, LogData, decode_runner_payload
from tests.cluster import Nvq
from tests.runner.test_live import Node, job


def test_huge_result_stays_on_the_node(node: Node) -> None:
    node.start()
    c, _ = node.hello()
    c.send(job(1, 'truncate -s 100M "$NVQ_JOB_DIR/result.json"'))
    exited = c.expect(JobExited, job_id=1)
    assert exited.exit_code == 0 and exited.result is None
    assert exited.result_error == "result.json is 100 MiB, over the 1 MiB limit"
    assert (node.home / "jobs" / "1" / "result.json").stat().st_size == 100 << 20
    c.send(job(2, 'echo \'{"ok": 1}\' > "$NVQ_JOB_DIR/result.json"', max_result=16))
    assert c.expect(JobExited, job_id=2).result == '{"ok": 1}\n'


def test_result_over_the_frame_limit_is_not_replayed_forever(node: Node) -> None:
    node.start()
    c, _ = node.hello()
    c.send(job(3, 'truncate -s 70M "$NVQ_JOB_DIR/result.json"', max_result=1 << 30))
    exited = c.expect(JobExited, job_id=3, timeout=30)
    assert exited.result is None and exited.result_error == "result.json is too large to send"
    # A reconnecting daemon gets the same small event replayed, and work goes on.
    c2, _ = node.hello()
    assert c2.expect(JobExited, job_id=3).seq == exited.seq
    c2.send(job(4, "exit 0"))
    assert c2.expect(JobExited, job_id=4).exit_code == 0


def test_log_chunks_are_split_to_fit() -> None:
    data = bytes(range(256)) * 40
    frames = FrameReader().feed(encode_frames(LogData(req=7, data=data, eof=True), limit=1000))
    msgs = [decode_runner_payload(f) for f in frames]
    assert len(msgs) > 1 and all(len(f) <= 1000 for f in frames)
    assert all(isinstance(m, LogData) and m.req == 7 for m in msgs)
    assert b"".join(m.data for m in msgs if isinstance(m, LogData)) == data
    assert [m.eof for m in msgs if isinstance(m, LogData)] == [False] * (len(msgs) - 1) + [True]
    assert len(encode_frames(LogData(req=1, data=b"x"))) < MAX_FRAME


def test_queue_keeps_running_after_a_huge_result(nvq: Nvq) -> None:
    big = nvq.submit("--", "sh", "-c", 'truncate -s 100M "$NVQ_JOB_DIR/result.json"')
    after = nvq.submit("--", "true")
    code, jobs = nvq.wait(big["id"], after["id"], timeout=60)
    assert code == 0
    assert [j["state"] for j in jobs] == ["completed", "completed"]
