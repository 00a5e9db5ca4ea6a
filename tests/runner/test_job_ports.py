"""Each job's port ($NVQ_PORT, MASTER_PORT): free on its node, never two live jobs'."""

from __future__ import annotations

import socket
from pathlib import Path

from nvq_runner import ports
from nvq_runner.protocol import JobExited, JobStarted
from tests.runner.test_live import Node, job, node  # noqa: F401 - the fixture


def test_pick_skips_taken_and_busy_ports_and_wraps() -> None:
    busy = {10}
    free = lambda p: p not in busy  # noqa: E731
    assert ports.pick(set(), None, 10, 13, free) == 11
    assert ports.pick({12}, 11, 10, 13, free) == 13
    assert ports.pick(set(), 13, 10, 13, free) == 11  # wraps past the busy 10
    assert ports.pick({11, 12, 13}, None, 10, 13, free) is None


def test_a_listening_port_is_not_bindable() -> None:
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        s.listen()
        assert not ports.bindable(s.getsockname()[1])


def test_two_live_jobs_get_different_ports(node: Node, tmp_path: Path) -> None:  # noqa: F811
    node.start()
    c, _ = node.hello()
    gate = tmp_path / "gate"
    body = f'echo "$NVQ_PORT $MASTER_PORT" > "$NVQ_JOB_DIR/port"; while [ ! -e {gate} ]; do sleep 0.05; done'
    c.send(job(1, body))
    c.send(job(2, body, env={"MASTER_PORT": "1234"}))
    started: dict[int, JobStarted] = {}
    while len(started) < 2:
        msg = c.expect(JobStarted)
        started[msg.job_id] = msg
    first, second = started[1], started[2]
    assert first.port is not None and second.port is not None
    assert first.port != second.port
    gate.touch()
    ended = {c.expect(JobExited).job_id for _ in range(2)}
    assert ended == {1, 2}
    seen = [(node.home / "jobs" / str(i) / "port").read_text().split() for i in (1, 2)]
    assert seen[0] == [str(first.port), str(first.port)]
    assert seen[1] == [str(second.port), "1234"]  # the job's own MASTER_PORT is kept


def test_a_new_runner_starts_its_round_anywhere_in_the_range() -> None:
    """Runners sharing a host must not all hand out the range's first port first."""
    starts = {ports.round_start(10, 13) for _ in range(200)}
    assert starts == {10, 11, 12, 13}

