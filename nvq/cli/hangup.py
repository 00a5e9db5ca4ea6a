"""A forwarded command's hang-up: over `[remote]` the laptop's `nvq` holds the ssh
call's stdin open, writing nothing, for as long as it runs; when it ends (Ctrl-C, a
kill, a dropped connection) sshd closes the command's stdin on the queue host. End of
input is how the command there learns it, and it then ends as on a Ctrl-C of its own:
`nvq web` or `job wait` left running there would outlive the laptop's command.

Only commands that read nothing from stdin are run this way (nvq.remote sets
`END_ON_EOF` for them); a terminal command gets a pty, whose hang-up does the same."""

from __future__ import annotations

import os
import signal
import threading
import time

from nvq.remote_gate import END_ON_EOF

# A command that has not ended this long after the SIGINT gets SIGHUP, whose default
# action (nvq installs no handler for it) ends the process.
GRACE_S = 10.0


def watch_stdin() -> None:
    """Watch stdin from a thread of its own; its end interrupts this process."""
    os.environ.pop(END_ON_EOF, None)  # not for what this command starts (a daemon)
    threading.Thread(target=_until_eof, name="nvq-hangup", daemon=True).start()


def _until_eof() -> None:
    try:
        while os.read(0, 65536):
            pass
    except OSError:
        pass
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(GRACE_S)
    os.kill(os.getpid(), signal.SIGHUP)
