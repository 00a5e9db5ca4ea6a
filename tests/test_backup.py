"""Backups and restore through the real CLI: the running daemon snapshots queue.db with
SQLite's online backup API; a restore (daemon stopped) brings every job back."""

from __future__ import annotations

import shutil
import sqlite3
import sys
import time
from pathlib import Path

from tests.cluster import Nvq


def test_backup_lose_the_database_restore(nvq: Nvq, tmp_path: Path) -> None:
    nvq.write_config(f'[queue]\nbackup_dirs = ["{tmp_path}"]\n')  # backups go here too
    jobs = [nvq.submit("--gpus", "0", "--name", f"j{i}", "--", "true") for i in range(5)]
    nvq.wait(*(j["id"] for j in jobs))
    held = nvq.submit("--gpus", "0", "--", "sleep", "30")  # running during the backup
    nvq.wait_for(held["id"], lambda j: j["state"] == "running")

    target = tmp_path / "snap.db"
    doc = nvq.json("queue", "backup", str(target))
    assert doc["path"] == str(target) and doc["jobs"] == 6
    assert sqlite3.connect(target).execute("PRAGMA quick_check").fetchone()[0] == "ok"
    assert not any(p.name.startswith(".snap.db.tmp") for p in tmp_path.iterdir())
    status = nvq.json("queue", "status")
    assert abs(status["last_backup_at"] - doc["at"]) < 1e-3
    assert "last backup" in nvq.ok("queue", "status").out

    # Never overwrites: the same path again is refused, and the file is unchanged.
    before = target.read_bytes()
    again = nvq.run("queue", "backup", str(target))
    assert (
        again.code == 1
        and again.err.strip() == f"nvq: {target} exists; a backup never overwrites a file"
    )
    assert target.read_bytes() == before
    # A directory gets a time-stamped file inside it.
    in_dir = nvq.json("queue", "backup", str(tmp_path))
    assert Path(in_dir["path"]).parent == tmp_path and Path(in_dir["path"]).name.startswith(
        "queue-"
    )

    # Restore is refused while the daemon runs, and changes nothing.
    refused = nvq.run("queue", "restore", str(target))
    assert refused.code == 1 and "stop it first" in refused.err
    assert not list(nvq.home.glob("queue.db.replaced-*"))

    nvq.ok("job", "cancel", str(held["id"]))
    nvq.ok("daemon", "stop")
    for suffix in ("", "-wal", "-shm"):
        (nvq.home / f"queue.db{suffix}").unlink(missing_ok=True)
    restored = nvq.json("queue", "restore", str(target))
    assert restored["jobs"] == 6 and restored["replaced"] is None
    listed = nvq.json("job", "ls")["jobs"]
    assert [j["name"] for j in listed][:5] == [f"j{i}" for i in range(5)]
    assert all(j["state"] == "completed" for j in listed[:5])
    assert len(listed) == 6

    # Restoring over an existing database keeps the old one aside.
    nvq.ok("daemon", "stop")
    second = nvq.json("queue", "restore", str(target))
    assert second["replaced"] and Path(second["replaced"]).exists()
    bad = nvq.run("queue", "restore", str(tmp_path / "missing.db"))
    assert bad.code == 1 and "no such file" in bad.err


def test_periodic_backups_rotate(nvq: Nvq, tmp_path: Path) -> None:
    backups = tmp_path / "backups"
    nvq.write_config(
        f'[queue.backup]\nenabled = true\ninterval_hours = 0.0003\nkeep = 2\ndirectory = "{backups}"\n'
    )
    nvq.submit("--gpus", "0", "--", "true")
    seen: set[str] = set()  # every backup ever listed: a round's new one has a new name

    def listed() -> list[Path]:
        made = sorted(backups.glob("queue-*.db")) if backups.exists() else []
        seen.update(p.name for p in made)
        return made

    deadline = time.monotonic() + 60
    while not (len(listed()) >= 2 and nvq.json("queue", "status")["last_backup_at"]):
        assert time.monotonic() < deadline, "the first two backups never came"
        time.sleep(0.2)
    # Two more rounds: rotation must have removed two, keeping the newest two.
    enough = len(seen) + 2
    while len(seen) < enough:
        assert time.monotonic() < deadline, f"two more rounds never came: {sorted(seen)}"
        listed()
        time.sleep(0.05)
    # A round publishes its snapshot, then deletes the oldest: between the two a
    # listing sees three. Once the round is done the count is two again.
    while len(made := listed()) != 2:
        assert time.monotonic() < deadline, made
        time.sleep(0.05)
    # The newest is a whole database (read-only: the next round may already be rotating
    # the older one away, and a plain connect would create an empty file in its place).
    newest = sqlite3.connect(f"file:{made[-1]}?mode=ro", uri=True)
    assert newest.execute("SELECT COUNT(*) FROM jobs").fetchone()[0] == 1


def test_a_backup_outside_the_backup_directories_is_refused(nvq: Nvq, tmp_path: Path) -> None:
    # The daemon writes backups as the queue's owner: anywhere else (~/.ssh) is refused.
    outside = tmp_path / "authorized_keys2"
    r = nvq.run("queue", "backup", str(outside))
    assert r.code == 1
    assert r.err.startswith(f"nvq: {outside} is outside the backup directories (")
    assert not outside.exists()
    inside = nvq.json("queue", "backup", str(nvq.home / "backups" / "b.db"))
    assert inside["path"] == str(nvq.home / "backups" / "b.db")


def test_a_restored_queue_still_starts_its_snapshotted_jobs(nvq: Nvq, tmp_path: Path) -> None:
    assert nvq.cwd is not None
    (nvq.cwd / "train.py").write_text("print('trained from the snapshot')\n")
    gate = tmp_path / "gate"
    blocker = nvq.submit("--gpus", "0", "--no-snapshot", "--",
                         f"while [ ! -e {gate} ]; do sleep 0.05; done")
    job = nvq.submit("--gpus", "0", "--after-any", str(blocker["id"]), "--",
                     sys.executable, "train.py")
    done = nvq.submit("--gpus", "0", "--", "true")  # finished: its code is not carried
    nvq.wait(done["id"])
    nvq.wait_for(blocker["id"], lambda j: j["state"] == "running")

    doc = nvq.json("queue", "backup")
    assert doc["blobs"] == 2  # train.py and the manifest of the pending job
    (nvq.cwd / "train.py").unlink()
    nvq.ok("daemon", "stop")
    shutil.rmtree(nvq.home / "blobs")  # the queue host lost its blob store too
    restored = nvq.json("queue", "restore", doc["path"])
    assert restored["blobs"] == 2
    tables = sqlite3.connect(nvq.home / "queue.db").execute(
        "SELECT name FROM sqlite_master WHERE name = 'backup_blobs'").fetchall()
    assert tables == []  # the carried files went back to the store, not into the queue
    gate.touch()
    code, (ran,) = nvq.wait(job["id"])
    assert code == 0, ran
    assert "trained from the snapshot" in nvq.ok("job", "logs", str(job["id"])).out
