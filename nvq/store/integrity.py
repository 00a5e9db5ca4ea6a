"""`PRAGMA integrity_check` on queue.db: through the daemon's connection, or read-only
on the file when no daemon runs."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def integrity_of(conn: sqlite3.Connection) -> str:
    """ "ok", or every problem SQLite found, one per line."""
    rows = conn.execute("PRAGMA integrity_check").fetchall()
    return "\n".join(str(r[0]) for r in rows)


def integrity_of_file(path: Path) -> str:
    if not path.exists():
        return f"{path}: no such file"
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        return f"{path}: {exc}"
    try:
        return integrity_of(conn)
    except sqlite3.DatabaseError as exc:
        return f"{path}: {exc}"
    finally:
        conn.close()
