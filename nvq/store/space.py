"""A queue host whose disk is full: which errors say so, and the back-off a write
waits between tries while the daemon keeps answering."""

from __future__ import annotations

import errno
import sqlite3

FIRST_WAIT = 0.1
LONGEST_WAIT = 5.0


def is_disk_full(exc: BaseException) -> bool:
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    if isinstance(exc, sqlite3.OperationalError):
        code = getattr(exc, "sqlite_errorcode", None)
        return code == sqlite3.SQLITE_FULL or "database or disk is full" in str(exc)
    return False


def next_wait(wait: float) -> float:
    return min(wait * 2, LONGEST_WAIT)


def not_a_database(exc: BaseException) -> bool:
    """The file is there but is no SQLite database (or one damaged past reading)."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    text = str(exc)
    return "not a database" in text or "malformed" in text
