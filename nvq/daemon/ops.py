"""The daemon's operating side: alerts raised with each transition, the notifier, the
online backup (manual and periodic), and what `queue status` shows of them."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import anyio

from nvq import backup, keeper
from nvq.config import Config
from nvq.domain import alerts
from nvq.model import Alert, Tx
from nvq.notify import plan
from nvq.notify.notifier import Notifier
from nvq.store import Store
from nvq.store import alerts as alert_table
from nvq.world.blobs import BlobStore

log = logging.getLogger("nvq.daemon")


class Ops:
    def __init__(self, config: Config, store: Store, home: Path) -> None:
        self.config = config
        self.store = store
        self.home = home
        self.notifier = Notifier(config, store, home)
        self._backup_lock = anyio.Lock()

    @property
    def backup_dir(self) -> Path:
        d = self.config.backup.directory
        return Path(d) if d else self.home / "backups"

    # ------------------------------------------------------------ transitions

    def prepare(self, tx: Tx) -> None:
        """Add the alerts and deliveries `tx`'s events call for (decided purely, committed
        in the same transaction as the transition)."""
        if not tx.events:
            return
        jobs = {j.id: j for j in tx.jobs}
        raised = alerts.derive(tx.events, jobs)
        owed = plan.plan(raised, tx.events, jobs, self.config, time.time())
        if raised:
            tx.alerts = [*tx.alerts, *raised]
        if owed:
            tx.outbox = [*tx.outbox, *owed]

    def committed(self, tx: Tx) -> None:
        if tx.outbox:
            self.notifier.wake()

    # ------------------------------------------------------------ requests

    async def alerts(self, include_acked: bool) -> list[Alert]:
        return await self.store.sync(lambda conn: alert_table.alerts(conn, include_acked=include_acked))

    async def ack(self, ids: list[int] | None, by: str) -> list[Alert]:
        now = time.time()
        return await self.store.write(lambda conn: alert_table.ack(conn, ids, by, now))

    async def backup(self, path: str | None, *, rotate: bool = False) -> dict[str, Any]:
        async with self._backup_lock:
            allowed = [Path(d) for d in self.config.queue.backup_dirs]
            dest = backup.target(path, self.backup_dir, time.time(), allowed)
            blobs = BlobStore(self.home / "blobs")
            doc = await self.store.sync(lambda conn: backup.snapshot(conn, dest, blobs))
            if rotate:
                doc["deleted"] = self._rotate()
            log.info("backup %s (%d bytes, %ss)", doc["path"], doc["bytes"], doc["seconds"])
            return doc

    def _rotate(self) -> list[str]:
        try:
            names = [p.name for p in self.backup_dir.iterdir()]
        except OSError:
            return []
        deleted = []
        for name in backup.rotate(names, self.config.backup.keep):
            (self.backup_dir / name).unlink(missing_ok=True)
            deleted.append(name)
        return deleted

    async def backup_loop(self) -> None:
        """`[queue.backup] enabled`: snapshot every `interval_hours`, keep the newest."""
        cfg = self.config.backup
        if not cfg.enabled:
            return
        while True:
            last = await self.store.sync(backup.last_backup_at)
            now = time.time()
            await anyio.sleep(backup.next_due(last, cfg.interval_hours, now) - now)
            try:
                await self.backup(None, rotate=True)
            except backup.BackupError as exc:
                log.error("periodic backup failed: %s", exc)
                await anyio.sleep(min(3600.0, cfg.interval_hours * 3600))

    def disk_full(self) -> str | None:
        """What `queue status` says while writes wait for space on the queue host."""
        since = self.store.disk_full_since
        if since is None:
            return None
        text = (
            f"disk full on the queue host since {time.strftime('%H:%M:%S', time.localtime(since))}"
        )
        waiting = self.store.writes_waiting
        if waiting:
            text += f": {waiting} change{'' if waiting == 1 else 's'} waiting for space"
        return text

    async def status(self) -> dict[str, Any]:
        open_alerts = await self.alerts(include_acked=False)
        health = await self.store.sync(alert_table.channel_health)
        last = await self.store.sync(backup.last_backup_at)
        return {
            "alerts": open_alerts,
            "notify": health,
            "last_backup_at": last,
            "keeper": keeper.state(self.home),
            "disk_full": self.disk_full(),
        }
