"""What a daemon loads to start: a queue with no SSH node and no Slurm cluster never
loads asyncssh (and the cryptography under it), a third of the daemon's start-up CPU;
the modules that need it are imported where a node is reached over SSH."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = (
    "import json, sys, nvq.daemon.main; "
    "print(json.dumps(sorted(m for m in sys.modules "
    "if m.partition('.')[0] in ('asyncssh', 'cryptography'))))"
)


def test_the_daemon_loads_no_ssh_until_a_node_needs_it() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          timeout=120, check=True)
    assert json.loads(done.stdout) == []
