"""The `alerts` and `outbox` tables: alerts raised, and the notifications owed for
them. Plain sqlite3 functions, run on the store's connection thread (`Store.sync`),
or inside `Store.commit`'s transaction.

An alert's `key` is unique, so the same failure (job + attempt + kind) is recorded once
however many times the event that causes it is replayed. An outbox row is one delivery
owed to one channel; its `key` is unique too, and it stays in the table, marked
`delivered_at`, so a restart never sends it again.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import msgspec

from nvq.domain.alerts import Resolution
from nvq.model import Alert, NewAlert, OutboxItem


class OutboxRow(msgspec.Struct, kw_only=True):
    id: int
    channel: str
    key: str
    payload: dict[str, Any]
    attempts: int
    next_try: float


_ALERT_COLUMNS = (
    "id, time, kind, severity, job_id, node, attempt, message, detail, acked_at, acked_by"
)
_json = msgspec.json.Encoder()


def write(
    conn: sqlite3.Connection, alerts: list[NewAlert], outbox: list[OutboxItem], now: float
) -> None:
    """Insert a transition's alerts and deliveries (inside its transaction)."""
    new_ids: dict[str, int] = {}
    for a in alerts:
        cur = conn.execute(
            "INSERT OR IGNORE INTO alerts (time, kind, severity, job_id, node, attempt, key, "
            "message, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (now, a.kind, a.severity, a.job_id, a.node, a.attempt, a.key, a.message, a.detail),
        )
        if cur.rowcount == 1 and cur.lastrowid is not None:
            new_ids[a.key] = cur.lastrowid
    for item in outbox:
        payload = item.payload
        if item.alert_key is not None:
            alert_id = new_ids.get(item.alert_key)
            if alert_id is None:
                continue  # the alert was already raised: so was its delivery
            payload = {**payload, "alert": {**payload.get("alert", {}), "id": alert_id}}
        conn.execute(
            "INSERT OR IGNORE INTO outbox (created_at, channel, key, payload, next_try) "
            "VALUES (?, ?, ?, ?, ?)",
            (now, item.channel, item.key, _json.encode(payload).decode(), now),
        )


def resolve(conn: sqlite3.Connection, found: list[Resolution], now: float) -> None:
    """Close the open alerts that are over (inside the transaction that ended them).
    A resolved alert is an acknowledged one, acknowledged by what resolved it."""
    for r in found:
        column, value = ("job_id", r.job_id) if r.job_id is not None else ("node", r.node)
        # substr, not LIKE: a node's name may hold `_` or `%`.
        conn.execute(
            f"UPDATE alerts SET acked_at = ?, acked_by = ? WHERE acked_at IS NULL "
            f"AND {column} = ? AND kind IN ({', '.join('?' for _ in r.kinds)}) "
            "AND substr(key, 1, ?) = ?",
            (now, r.why, value, *r.kinds, len(r.key_prefix), r.key_prefix),
        )


def _alert(row: tuple[Any, ...]) -> Alert:
    return Alert(
        id=row[0],
        time=row[1],
        kind=row[2],
        severity=row[3],
        job_id=row[4],
        node=row[5],
        attempt=row[6],
        message=row[7],
        detail=row[8],
        acked_at=row[9],
        acked_by=row[10],
    )


def alerts(conn: sqlite3.Connection, *, include_acked: bool) -> list[Alert]:
    sql = f"SELECT {_ALERT_COLUMNS} FROM alerts"
    if not include_acked:
        sql += " WHERE acked_at IS NULL"
    return [_alert(r) for r in conn.execute(sql + " ORDER BY id").fetchall()]


def ack(conn: sqlite3.Connection, ids: list[int] | None, by: str, now: float) -> list[Alert]:
    """Acknowledge `ids` (None: every open alert) in one transaction, with an event.
    Raises LookupError naming an unknown id before changing anything."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        if ids is None:
            ids = [r[0] for r in conn.execute("SELECT id FROM alerts WHERE acked_at IS NULL")]
        else:
            known = {
                r[0]
                for r in conn.execute(
                    f"SELECT id FROM alerts WHERE id IN ({', '.join('?' for _ in ids)})", ids
                )
            }
            missing = [i for i in ids if i not in known]
            if missing:
                raise LookupError(f"no alert with id {missing[0]}")
        conn.executemany(
            "UPDATE alerts SET acked_at = ?, acked_by = ? WHERE id = ? AND acked_at IS NULL",
            [(now, by, i) for i in ids],
        )
        if ids:
            conn.execute(
                "INSERT INTO events (time, kind, job_id, node, data) VALUES (?, ?, NULL, NULL, ?)",
                (now, "alerts_acked", _json.encode({"ids": ids, "by": by}).decode()),
            )
        rows = conn.execute(
            f"SELECT {_ALERT_COLUMNS} FROM alerts WHERE id IN ({', '.join('?' for _ in ids)})",
            ids,
        ).fetchall()
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return [_alert(r) for r in rows]


def due(conn: sqlite3.Connection, now: float, limit: int = 100) -> list[OutboxRow]:
    rows = conn.execute(
        "SELECT id, channel, key, payload, attempts, next_try FROM outbox "
        "WHERE delivered_at IS NULL AND next_try <= ? ORDER BY id LIMIT ?",
        (now, limit),
    ).fetchall()
    return [
        OutboxRow(
            id=r[0],
            channel=r[1],
            key=r[2],
            payload=msgspec.json.decode(r[3]),
            attempts=r[4],
            next_try=r[5],
        )
        for r in rows
    ]


def next_due(conn: sqlite3.Connection) -> float | None:
    row = conn.execute("SELECT MIN(next_try) FROM outbox WHERE delivered_at IS NULL").fetchone()
    return row[0] if row else None


def mark_delivered(conn: sqlite3.Connection, row_id: int, now: float) -> None:
    conn.execute(
        "UPDATE outbox SET delivered_at = ?, attempts = attempts + 1 WHERE id = ?", (now, row_id)
    )


def mark_failed(
    conn: sqlite3.Connection, row_id: int, error: str, now: float, next_try: float
) -> None:
    conn.execute(
        "UPDATE outbox SET attempts = attempts + 1, last_error = ?, last_error_at = ?, "
        "next_try = ? WHERE id = ?",
        (error, now, next_try, row_id),
    )


def channel_health(conn: sqlite3.Connection) -> dict[str, dict[str, Any]]:
    """Per channel: deliveries waiting and the latest failure among them, so a channel
    that keeps failing is visible in `queue status`."""
    out: dict[str, dict[str, Any]] = {}
    for channel, delivered, waiting in conn.execute(
        "SELECT channel, SUM(delivered_at IS NOT NULL), SUM(delivered_at IS NULL) "
        "FROM outbox GROUP BY channel"
    ):
        out[channel] = {
            "delivered": delivered or 0,
            "waiting": waiting or 0,
            "failing": False,
            "last_error": None,
            "last_error_at": None,
            "attempts": 0,
        }
    for channel, error, at, attempts in conn.execute(
        "SELECT channel, last_error, last_error_at, attempts FROM outbox "
        "WHERE delivered_at IS NULL AND last_error IS NOT NULL ORDER BY last_error_at"
    ):
        out[channel].update(failing=True, last_error=error, last_error_at=at, attempts=attempts)
    return out
