"""`job logs` keeps the order the job wrote its two streams in, even for lines written
microseconds apart while the runner is busy syncing the job's artifacts (each
`touch .sync` asks for one), on the local node and on an sshd node, run after run."""

from __future__ import annotations

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
