"""queue.db through aiosqlite: `schema` holds every migration, one module per table
family holds its SQL (`jobs`, `events`, `nodes` with reaps, `lanes`, `alerts` with the
outbox, `meta`, `busy`), and `core.Store` is the daemon's handle that commits a
transition in one transaction."""

from nvq.store.core import Store, StoreError, store_error
from nvq.store.jobs import JOB_COLUMNS, job_from_row
from nvq.store.nodes import NodeRecord
from nvq.store.schema import MIGRATIONS, SCHEMA_VERSION

__all__ = [
    "JOB_COLUMNS",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "NodeRecord",
    "Store",
    "StoreError",
    "job_from_row",
    "store_error",
]
