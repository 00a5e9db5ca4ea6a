"""The daemon's notifier task: drains the outbox, one delivery at a time, in order.

Woken by the commit that queues something; the only timer is the retry backoff of a
delivery that failed (or the earliest one not due yet). An item is marked delivered
after its channel accepted it, so a crash in between resends it once: deliveries are
exactly once in normal operation and at least once across a crash at that instant.
"""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path

import anyio

from nvq.config import Config
from nvq.notify.channels import DeliveryError, deliver
from nvq.notify.plan import backoff
from nvq.store import Store
from nvq.store import alerts as alert_table

log = logging.getLogger("nvq.notify")


class Notifier:
    def __init__(self, config: Config, store: Store, home: Path) -> None:
        self.config = config
        self.store = store
        self.home = home
        self._wake = anyio.Event()

    def wake(self) -> None:
        self._wake.set()

    async def run(self) -> None:
        while True:
            self._wake = anyio.Event()
            try:
                await self.drain()
                next_try = await self.store.sync(alert_table.next_due)
            except Exception:
                log.exception("notifier pass failed")
                next_try = time.time() + self.config.notify.retry_initial
            delay = math.inf if next_try is None else max(0.0, next_try - time.time())
            with anyio.move_on_after(delay):
                await self._wake.wait()

    async def drain(self) -> None:
        while True:
            rows = await self.store.sync(lambda conn: alert_table.due(conn, time.time()))
            if not rows:
                return
            for row in rows:
                await self._deliver(row)

    async def _deliver(self, row: alert_table.OutboxRow) -> None:
        try:
            await anyio.to_thread.run_sync(
                deliver, row.channel, row.key, row.payload, self.config, self.home
            )
        except DeliveryError as exc:
            error = str(exc)
        except Exception as exc:  # a bug in a channel must not stop the others
            log.exception("delivering %s failed", row.key)
            error = f"{type(exc).__name__}: {exc}"
        else:
            done = time.time()
            await self.store.write(lambda conn: alert_table.mark_delivered(conn, row.id, done))
            log.info("delivered %s", row.key)
            return
        now = time.time()
        notify = self.config.notify
        retry_at = now + backoff(row.attempts + 1, notify.retry_initial, notify.retry_max)
        await self.store.write(lambda conn: alert_table.mark_failed(conn, row.id, error, now, retry_at))
        log.warning("delivering %s failed (attempt %d): %s", row.key, row.attempts + 1, error)
