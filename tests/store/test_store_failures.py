"""A queue.db the daemon cannot use ends the daemon: one line naming the way out, a
non-zero exit, no traceback, and no process left behind (aiosqlite's thread used to
keep a daemon that met a newer schema alive for ever)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from nvq.store import SCHEMA_VERSION
from tests.cluster import Nvq
from tests.fakes.aio import run
from tests.fakes.daemon import running_daemon, submit


def _newer_schema(db: Path) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("CREATE TABLE schema_version (version INTEGER)")
    conn.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION + 1,))
    conn.close()


def _jobs_table_damaged(db: Path) -> None:
    """A queue with jobs whose table is noise past a sound header and schema: found
    only when the daemon reads its jobs, after the store opened."""

    async def main() -> None:
        async with running_daemon(db.parent, {}) as core:
            for _ in range(3):
                await submit(core, gpus=1)

    run(main)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'jobs'").fetchone()
    (size,) = conn.execute("PRAGMA page_size").fetchone()
    conn.close()
    with open(db, "r+b") as f:
        f.seek((root - 1) * size)
        f.write(b"\xa5" * size)


@pytest.mark.parametrize(
    ("spoil", "says"),
    [
        (_newer_schema, "newer than this nvq knows"),
        (_jobs_table_damaged, "queue.db is damaged"),
    ],
)
def test_the_daemon_says_one_line_and_exits(
    nvq: Nvq, spoil: Callable[[Path], None], says: str
) -> None:
    nvq.home.mkdir(parents=True, exist_ok=True)
    nvq.home.chmod(0o700)
    spoil(nvq.home / "queue.db")
    # The daemon in the foreground, as a process of its own: it must end by itself
    # (subprocess.run's timeout is only the test's guard against the old hang).
    proc = subprocess.run(
        [sys.executable, "-m", "nvq", "daemon"],
        env=nvq.env, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert says in proc.stderr.strip().splitlines()[-1], proc.stderr
    # A client that starts the daemon for itself gets the same line.
    r = nvq.run("queue", "status", timeout=60)
    assert r.code != 0
    assert "Traceback" not in r.err and says in r.err, r.err
    assert not (nvq.home / "daemon.pid").exists()
