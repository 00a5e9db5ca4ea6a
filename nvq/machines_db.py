"""Compatibility alias: the busy tables now live in `nvq.store.busy` (and their
migration in `nvq.store.schema`); the integrator removes this module once nothing
imports it."""

from nvq.store.busy import BUSY_MODES, busy_modes, forbidden, set_busy_mode, set_forbidden
from nvq.store.schema import MIGRATIONS

MIGRATION = MIGRATIONS[3]

__all__ = ["BUSY_MODES", "MIGRATION", "busy_modes", "forbidden", "set_busy_mode", "set_forbidden"]
