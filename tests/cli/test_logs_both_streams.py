"""`job logs` shows both streams in the order written, from the queue host's copy of
the attempt's output, so it still reads when the node that ran the job is gone."""

from __future__ import annotations

import json
import time

from tests.cluster import Nvq
from tests.harness.sshd import SshdNode

# Each line waits until the one before it reached the queue host's copy, so the
# order written is the order copied (no sleeping: the job waits for the file).
SCRIPT = r"""
copy="$QUEUE_HOME/logs/$NVQ_JOB_ID/1.out"
seen() { while ! grep -q "$1" "$copy" 2>/dev/null; do sleep 0.02; done; }
echo out1; seen out1
echo err1 >&2; seen err1
echo out2; seen out2
echo 'Traceback: boom' >&2
exit 3
"""


def test_logs_of_a_failed_job_show_both_streams_while_its_node_is_down(
    remote: tuple[Nvq, SshdNode],
) -> None:
    nvq, node = remote
    nvq.env["QUEUE_HOME"] = str(nvq.home)
    silent = nvq.submit("--gpus", "0", "--", "true")
    job = nvq.submit("--gpus", "0", "--", SCRIPT)
    code, (done,) = nvq.wait(job["id"])
    assert code == 1 and done["state"] == "failed", done
    jid = str(job["id"])
    assert nvq.wait(silent["id"])[0] == 0

    assert nvq.ok("job", "logs", jid).out == "out1\nerr1\nout2\nTraceback: boom\n"
    marked = nvq.ok("job", "logs", jid, "--streams").out
    assert marked == "out| out1\nerr| err1\nout| out2\nerr| Traceback: boom\n"
    assert nvq.ok("job", "logs", jid, "--stderr").out == "err1\nTraceback: boom\n"
    assert nvq.ok("job", "logs", jid, "--stdout", "-n", "1").out == "out2\n"
    bad = nvq.run("job", "logs", jid, "--stdout", "--stderr")
    assert bad.code == 2 and "give one of" in bad.err

    assert " INFO asyncssh" not in (nvq.home / "daemon.log").read_text()  # quiet: warnings only
    node.kill_all()  # the node is gone: its sshd and every session with it
    _wait_until_unreachable(nvq, "n0")
    after = nvq.ok("job", "logs", jid, "--attempt", "1")
    assert after.out == "out1\nerr1\nout2\nTraceback: boom\n"
    assert nvq.ok("job", "logs", jid, "--attempt", "1", "--stderr").out == (
        "err1\nTraceback: boom\n"
    )
    # a job that printed nothing reads as nothing printed, not as its node's absence
    for args in ([], ["--stderr"], ["--attempt", "1"]):
        quiet = nvq.run("job", "logs", str(silent["id"]), *args)
        assert (quiet.code, quiet.out, quiet.err) == (0, "", ""), (args, quiet)
    quiet = nvq.run("job", "logs", str(silent["id"]), "--json")
    assert quiet.code == 0 and json.loads(quiet.out)["text"] == "", quiet


def _wait_until_unreachable(nvq: Nvq, name: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        nodes = nvq.json("queue", "nodes")["nodes"]
        (row,) = [n for n in nodes if n["name"] == name]
        if row["state"] != "up":
            return
        assert time.monotonic() < deadline, row
        time.sleep(0.1)
