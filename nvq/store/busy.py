"""The `node_busy` and `busy_forbid` tables: a node's busy mode set by hand, and the
owners who forbade their own jobs on their busy nodes.

The attempts of a job are not a table: `nvq.domain.attempts` derives them from the job's
events, which already record every dispatch, start and end in the same transaction
as the transition itself, so the two can never disagree.
"""

from __future__ import annotations

import sqlite3

BUSY_MODES = ("auto", "on", "off")


def busy_modes(conn: sqlite3.Connection) -> dict[str, str]:
    return {name: mode for name, mode in conn.execute("SELECT name, mode FROM node_busy")}


def set_busy_mode(conn: sqlite3.Connection, name: str, mode: str) -> None:
    conn.execute(
        "INSERT INTO node_busy (name, mode) VALUES (?, ?) "
        "ON CONFLICT(name) DO UPDATE SET mode = excluded.mode",
        (name, mode),
    )


def forbidden(conn: sqlite3.Connection) -> set[str]:
    return {user for (user,) in conn.execute("SELECT user FROM busy_forbid")}


def set_forbidden(conn: sqlite3.Connection, user: str, forbid: bool) -> None:
    if forbid:
        conn.execute("INSERT OR IGNORE INTO busy_forbid (user) VALUES (?)", (user,))
    else:
        conn.execute("DELETE FROM busy_forbid WHERE user = ?", (user,))
