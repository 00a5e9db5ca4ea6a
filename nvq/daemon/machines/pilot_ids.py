"""The Slurm job ids of the pilots this queue submitted, per cluster, kept in
queue.db (the `meta` table, key `pilots`), so they are in its backups and a restarted
daemon adopts them and never touches a job of the same name it did not submit. Each
change is committed with its event (`pilot_requested`, `pilot_started`,
`pilot_released`, `pilot_ended`), so `queue events` holds every pilot's history.

Queues from before kept them in `$NVQ_HOME/pilots.json`: read once, then removed.
"""

from __future__ import annotations

import json
from pathlib import Path

from nvq.model import NewEvent, Tx
from nvq.store import Store

KEY = "pilots"
Ids = dict[str, list[str]]


def decode(text: str | None) -> Ids:
    try:
        data = json.loads(text) if text else {}
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): [str(i) for i in v] for k, v in data.items() if isinstance(v, list)}


def encode(ids: Ids) -> str:
    return json.dumps({k: v for k, v in sorted(ids.items()) if v}, separators=(",", ":"))


class PilotIds:
    def __init__(self, store: Store, legacy: Path) -> None:
        self.store = store
        self.legacy = legacy
        self.ids: Ids = {}

    async def load(self) -> Ids:
        self.ids = decode(await self.store.meta(KEY))
        if self.legacy.exists():
            try:
                old = decode(self.legacy.read_text())
            except OSError:
                old = {}
            for cluster, ids in old.items():
                self.ids.setdefault(cluster, []).extend(
                    i for i in ids if i not in self.ids[cluster]
                )
            await self.store.commit(Tx(meta=[(KEY, encode(self.ids))]))
            self.legacy.unlink(missing_ok=True)
        return {k: list(v) for k, v in self.ids.items()}

    def added(self, cluster: str, job_id: str) -> Tx:
        """The transition that records a submitted pilot."""
        if job_id not in self.ids.setdefault(cluster, []):
            self.ids[cluster].append(job_id)
        return Tx(
            meta=[(KEY, encode(self.ids))],
            events=[NewEvent("pilot_requested", None, f"{cluster}/{job_id}", {"cluster": cluster})],
        )

    def forgotten(self, cluster: str, job_id: str, why: str) -> Tx:
        """The transition that records a pilot's end, released by the queue or ended by
        Slurm, with the reason."""
        if job_id in self.ids.get(cluster, []):
            self.ids[cluster].remove(job_id)
        kind = "pilot_released" if why.startswith("released") else "pilot_ended"
        return Tx(
            meta=[(KEY, encode(self.ids))],
            events=[NewEvent(kind, None, f"{cluster}/{job_id}", {"reason": why})],
        )
