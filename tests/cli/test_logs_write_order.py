"""`job logs` keeps the order the job wrote its two streams in, even for lines written
microseconds apart while the runner is busy syncing the job's artifacts (each
`touch .sync` asks for one), on the local node and on an sshd node, run after run."""

from __future__ import annotations

from pathlib import Path

from tests.cluster import Nvq
from tests.harness.sshd import SshdNode

PAIRS = 40
# Each `echo` is one write: `out i` and `err i` land microseconds apart.
SCRIPT = f"""
for i in $(seq 1 {PAIRS}); do
  echo "out $i"; echo "err $i" >&2
  touch "$NVQ_ARTIFACTS/.sync"
done
echo 'Traceback: boom' >&2
exit 3
"""
WRITTEN = "".join(f"out {i}\nerr {i}\n" for i in range(1, PAIRS + 1)) + "Traceback: boom\n"
MARKED = "".join(f"out| out {i}\nerr| err {i}\n" for i in range(1, PAIRS + 1)) + (
    "err| Traceback: boom\n")


def _check(nvq: Nvq, runs: int) -> None:
    jobs = [nvq.submit("--gpus", "0", "--", SCRIPT)["id"] for _ in range(runs)]
    for jid in jobs:
        code, (done,) = nvq.wait(jid)
        assert code == 1 and done["state"] == "failed", done
    for jid in jobs:
        got = nvq.ok("job", "logs", str(jid), "-n", "-1").out
        assert got.splitlines() == WRITTEN.splitlines(), jid
        assert nvq.ok("job", "logs", str(jid), "-n", "-1", "--streams").out == MARKED, jid


def test_logs_keep_the_order_written_on_the_local_node(nvq: Nvq) -> None:
    _check(nvq, 3)


def test_logs_keep_the_order_written_on_an_sshd_node(remote: tuple[Nvq, SshdNode]) -> None:
    nvq, _ = remote
    _check(nvq, 3)


def test_following_logs_shows_the_order_written(nvq: Nvq) -> None:
    jid = nvq.submit("--gpus", "0", "--", SCRIPT)["id"]
    followed = nvq.run("job", "logs", str(jid), "-f", "-n", "-1", timeout=120)
    assert followed.out == WRITTEN, followed


def test_an_adopted_job_keeps_the_order_written_across_a_runner_restart(
    nvq: Nvq, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    body = (
        'for i in 1 2 3; do echo "out $i"; echo "err $i" >&2; done; '
        f"while [ ! -e {go} ]; do sleep 0.05; done; "
        'for i in 4 5 6; do echo "out $i"; echo "err $i" >&2; done'
    )
    job = nvq.submit("--gpus", "0", "--", body)["id"]
    nvq.wait_for(job, lambda j: j["state"] == "running")
    nvq.json("node", "restart", "local")  # the new runner adopts the job
    assert nvq.show(job)["state"] == "running"
    go.touch()
    code, _ = nvq.wait(job)
    assert code == 0
    want = "".join(f"out {i}\nerr {i}\n" for i in range(1, 7))
    assert nvq.ok("job", "logs", str(job), "-n", "-1").out == want


def test_the_write_order_record_stays_under_max_log_size(nvq: Nvq) -> None:
    """A record is 17 bytes a write however small the write: 120,000 writes of two
    bytes would leave 2 MiB of records beside 240 KB of logs; they are held under the
    job's max_log_size (1 MiB) as the logs are, and the logs stay whole."""
    nvq.write_config('[queue]\nmax_log_size = "1MiB"\n')
    pairs = 60_000
    body = f'i=0; while [ $i -lt {pairs} ]; do echo o; echo e >&2; i=$((i+1)); done'
    job = nvq.submit("--gpus", "0", "--", body)["id"]
    code, _ = nvq.wait(job, timeout=180)
    assert code == 0
    (order,) = (nvq.node_home / "jobs").glob(f"*-{job}-*/order-1.log")
    assert 0 < order.stat().st_size <= 1024 * 1024
    logs = nvq.ok("job", "logs", str(job), "-n", "-1", timeout=120).out.splitlines()
    assert logs.count("o") == pairs and logs.count("e") == pairs


def test_a_silent_job_leaves_no_order_record_and_other_files_do_not_blur_the_order(
    nvq: Nvq,
) -> None:
    """The order thread reads events of every file in the job directory; only a log's
    write counts. A job that never writes has no record file at all (an inode per job
    on a busy node), and one that writes its status file between its lines of output
    still gets them in the order written."""
    silent = nvq.submit("--gpus", "0", "--", "true")["id"]
    body = ('for i in 1 2 3 4 5; do echo "step $i" > "$NVQ_STATUS_FILE"; '
            'echo "out $i"; echo "step $i." > "$NVQ_STATUS_FILE"; echo "err $i" >&2; done')
    chatty = nvq.submit("--gpus", "0", "--", body)["id"]
    code, _ = nvq.wait(silent, chatty)
    assert code == 0
    (silent_dir,) = (nvq.node_home / "jobs").glob(f"*-{silent}-*")
    assert not (silent_dir / "order-1.log").exists()
    assert nvq.ok("job", "logs", str(silent), "-n", "-1").out == ""
    want = "".join(f"out| out {i}\nerr| err {i}\n" for i in range(1, 6))
    assert nvq.ok("job", "logs", str(chatty), "-n", "-1", "--streams").out == want
