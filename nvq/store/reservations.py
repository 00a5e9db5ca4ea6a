"""The `reservations` table: one row per reservation (`nvq reserve`), its document as
JSON (`nvq.domain.reservations.CardReservation`)."""

from __future__ import annotations

import sqlite3

import msgspec

from nvq.domain.reservations import CardReservation


def load(conn: sqlite3.Connection) -> list[CardReservation]:
    rows = conn.execute("SELECT doc FROM reservations ORDER BY name")
    return [msgspec.json.decode(doc, type=CardReservation) for (doc,) in rows]


def put(conn: sqlite3.Connection, res: CardReservation) -> None:
    conn.execute(
        "INSERT INTO reservations (name, doc) VALUES (?, ?)",
        (res.name, msgspec.json.encode(res).decode()),
    )


def remove(conn: sqlite3.Connection, name: str) -> None:
    conn.execute("DELETE FROM reservations WHERE name = ?", (name,))
