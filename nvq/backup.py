"""Consistent snapshots of queue.db, and putting one back.

`snapshot` runs inside the daemon, on the database's own connection thread, with
SQLite's online backup API: the copy is one consistent state of the queue even while
jobs change. It is checked (`PRAGMA quick_check`) and published atomically with a hard
link, which fails rather than replace an existing file, so a backup never overwrites.
`restore` runs in the CLI with the daemon stopped (it takes the daemon's lock).
A backup carries the snapshot blobs its unfinished jobs need, and a restore puts them
back (nvq.world.backup_blobs), so a restored queue can still start those jobs.
"""

from __future__ import annotations

import os
import re
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nvq.errors import UserError
from nvq.home import AlreadyRunning, Home
from nvq.store import jobs, meta
from nvq.world.backup_blobs import carry, restore_blobs
from nvq.world.blobs import BlobStore

NAME_RE = re.compile(r"queue-\d{8}-\d{6}(-\d+)?\.db")
LAST_BACKUP = "last_backup_at"


class BackupError(UserError):
    """One line for the user; nothing was published (or changed)."""


def default_name(now: float) -> str:
    return time.strftime("queue-%Y%m%d-%H%M%S.db", time.localtime(now))


def target(
    path: str | None, directory: Path, now: float, allowed: Sequence[Path] = ()
) -> Path:
    """Where a backup goes: PATH as given, inside PATH when it is a directory, else a
    time-stamped name in `directory`. A PATH must lie inside `directory` or one of
    `allowed`: the daemon writes it with its owner's rights, so a path anywhere (an
    ~/.ssh file) would let whoever asks write as the queue's owner."""
    if path is not None:
        p = Path(path).expanduser().absolute()
        _check_inside(p, [directory, *allowed])
        if not p.is_dir():
            return p
        directory = p
    name = default_name(now)
    n = 1
    while (directory / name).exists():  # two snapshots within a second
        n += 1
        name = default_name(now).removesuffix(".db") + f"-{n}.db"
    return directory / name


def _check_inside(path: Path, roots: Sequence[Path]) -> None:
    real = path.resolve()
    for root in roots:
        if real.is_relative_to(root.resolve()):
            return
    where = ", ".join(str(r) for r in roots)
    raise BackupError(
        f"{path} is outside the backup directories ({where}): add its directory to "
        "[queue] backup_dirs to write backups there"
    )


def rotate(names: list[str], keep: int) -> list[str]:
    """The automatic snapshots to delete so that the newest `keep` remain (names sort
    by time; files not named like ours are never touched)."""

    def order(name: str) -> tuple[str, int]:
        match = NAME_RE.fullmatch(name)
        assert match is not None
        return name[:21], int(match.group(1)[1:]) if match.group(1) else 1

    ours = sorted((n for n in names if NAME_RE.fullmatch(n)), key=order)
    return ours[: max(0, len(ours) - keep)]


def next_due(last: float | None, interval_hours: float, now: float) -> float:
    return now if last is None else max(now, last + interval_hours * 3600)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def check(path: Path) -> int:
    """`quick_check` a database file and count its jobs; raises BackupError."""
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            result = db.execute("PRAGMA quick_check").fetchone()[0]
            if result != "ok":
                raise BackupError(f"{path}: quick_check failed: {result}")
            return int(db.execute("SELECT COUNT(*) FROM jobs").fetchone()[0])
        finally:
            db.close()
    except sqlite3.DatabaseError as exc:
        raise BackupError(f"{path}: not a queue database: {exc}") from None


def snapshot(
    conn: sqlite3.Connection, dest: Path, blobs: BlobStore | None = None,
) -> dict[str, Any]:
    """Copy the live database to `dest` (on the store's thread), with the blobs of
    `blobs` its unfinished jobs need. Never overwrites."""
    started = time.monotonic()
    if dest.exists():
        raise BackupError(f"{dest} exists; a backup never overwrites a file")
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BackupError(f"{dest.parent}: {exc.strerror}") from None
    tmp = dest.with_name(f".{dest.name}.tmp-{os.getpid()}")
    try:
        copy = sqlite3.connect(tmp)
        try:
            conn.backup(copy)
            carried = carry(copy, blobs) if blobs is not None else (0, 0)
            # A standalone file: no -wal beside it when it is opened or copied later.
            copy.execute("PRAGMA journal_mode=DELETE")
        finally:
            copy.close()
        jobs = check(tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        try:
            os.link(tmp, dest)
        except FileExistsError:
            raise BackupError(f"{dest} exists; a backup never overwrites a file") from None
        _fsync_dir(dest.parent)
    except OSError as exc:
        raise BackupError(f"{dest}: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)
    now = time.time()
    meta.set_meta(conn, LAST_BACKUP, repr(now))
    return {
        "path": str(dest),
        "bytes": dest.stat().st_size,
        "jobs": jobs,
        "blobs": carried[0],
        "blob_bytes": carried[1],
        "seconds": round(time.monotonic() - started, 4),
        "at": now,
    }


def last_backup_at(conn: sqlite3.Connection) -> float | None:
    value = meta.get_meta(conn, LAST_BACKUP)
    return float(value) if value else None


def _last_job_id(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'jobs'").fetchone()
    return int(row[0]) if row else 0


def _continue_ids(path: Path, last_id: int) -> None:
    """Make the next job id of the database at `path` come after `last_id`."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        jobs.raise_last_id(db, last_id)
    finally:
        db.close()


def restore(home: Path, source: Path) -> dict[str, Any]:
    """Put `source` in place of the home's queue.db. The daemon must be stopped: its lock
    is taken for the whole swap, so none can start half-way. The replaced database is
    kept beside it, never deleted."""
    source = source.expanduser().absolute()
    if not source.is_file():
        raise BackupError(f"{source}: no such file")
    jobs = check(source)
    paths = Home(home)
    home.mkdir(parents=True, exist_ok=True)
    try:
        lock = paths.take_lock()
    except AlreadyRunning as exc:
        raise BackupError(f"{exc}; stop it first (nvq daemon stop)") from None
    try:
        db = paths.db
        kept: str | None = None
        tmp = db.with_name(f".{db.name}.restore")
        with open(source, "rb") as src, open(tmp, "wb") as out:
            while chunk := src.read(1 << 20):
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        put = _restore_blobs(tmp, home)
        if db.exists():
            aside = db.with_name(f"{db.name}.replaced-{time.strftime('%Y%m%d-%H%M%S')}")
            # Fold the WAL in first so the kept copy is one self-contained file.
            old = sqlite3.connect(db)
            try:
                old.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                replaced_last_id = _last_job_id(old)
            except sqlite3.DatabaseError:
                replaced_last_id = 0  # a damaged queue.db: what a restore is for
            finally:
                old.close()
            # Job ids the replaced queue gave out are never given again: nodes may
            # still hold those jobs' output under the same ids.
            _continue_ids(tmp, replaced_last_id)
            os.replace(db, aside)
            kept = str(aside)
        for suffix in ("-wal", "-shm"):
            db.with_name(db.name + suffix).unlink(missing_ok=True)
        os.replace(tmp, db)
        _fsync_dir(db.parent)
    finally:
        lock.close()
    return {"restored": str(source), "jobs": jobs, "replaced": kept, "db": str(db),
            "blobs": put}


def _restore_blobs(path: Path, home: Path) -> int:
    """Blobs the backup at `path` carries go back into the home's store."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        return restore_blobs(db, BlobStore(home / "blobs"))
    except (sqlite3.DatabaseError, OSError) as exc:
        raise BackupError(f"{path}: cannot restore its snapshot files: {exc}") from None
    finally:
        db.close()
