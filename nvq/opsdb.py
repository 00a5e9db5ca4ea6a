"""Compatibility alias: the alerts, outbox and meta tables now live in
`nvq.store.alerts` and `nvq.store.meta`; the integrator removes this module once
nothing imports it."""

from nvq.store.alerts import (
    Alert,
    OutboxRow,
    ack,
    alerts,
    channel_health,
    due,
    mark_delivered,
    mark_failed,
    next_due,
    write,
)
from nvq.store.meta import get_meta, set_meta
from nvq.store.schema import MIGRATIONS

MIGRATION = MIGRATIONS[2]

__all__ = [
    "MIGRATION",
    "Alert",
    "OutboxRow",
    "ack",
    "alerts",
    "channel_health",
    "due",
    "get_meta",
    "mark_delivered",
    "mark_failed",
    "next_due",
    "set_meta",
    "write",
]
