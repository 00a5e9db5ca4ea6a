"""A stopped daemon that its parent has not reaped yet (a zombie) counts as gone, so
`daemon stop` does not wait for the reaping."""

from __future__ import annotations

import os
import subprocess
import sys

from nvq.cli.daemon_exit import running, wait_gone


def test_a_live_process_runs_and_an_unreaped_exited_one_does_not() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    try:
        assert running(child.pid)
        assert child.stdin is not None
        child.stdin.close()  # it exits; nobody reaps it yet
        # The zombie stays until we wait: gone as far as running() is concerned.
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # exited, kept a zombie
        assert not running(child.pid)
        wait_gone(child.pid, timeout=5)  # returns at once, the zombie notwithstanding
        assert os.path.exists(f"/proc/{child.pid}")  # still not reaped
    finally:
        child.wait()
    assert not running(child.pid)
