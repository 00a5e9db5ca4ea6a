"""The pilot ids a restarted daemon adopts: kept per cluster in queue.db, each change
committed with its event; a queue from before hands over its pilots.json once."""

from __future__ import annotations

from pathlib import Path

import anyio

from nvq.daemon.machines.pilot_ids import PilotIds
from nvq.store import Store


def test_ids_are_kept_per_cluster_in_the_store_with_their_events(tmp_path: Path) -> None:
    async def main() -> None:
        store = await Store.open(tmp_path / "queue.db")
        try:
            ids = PilotIds(store, tmp_path / "pilots.json")
            assert await ids.load() == {}
            for cluster, job_id in [("hpc", "81234"), ("hpc", "81235"), ("hpc", "81234"), ("other", "7")]:
                await store.commit(ids.added(cluster, job_id))
            await store.commit(ids.forgotten("hpc", "81234", "released: no job needed it"))
            await store.commit(ids.forgotten("other", "7", "the Slurm allocation ended"))
            again = PilotIds(store, tmp_path / "pilots.json")
            assert await again.load() == {"hpc": ["81235"]}
            kinds = [(e.kind, e.node) for e in await store.events(limit=20)]
            assert ("pilot_requested", "hpc/81235") in kinds
            assert ("pilot_released", "hpc/81234") in kinds
            assert ("pilot_ended", "other/7") in kinds
        finally:
            await store.close()

    anyio.run(main)


def test_a_queue_from_before_hands_over_its_pilots_json_once(tmp_path: Path) -> None:
    async def main() -> None:
        legacy = tmp_path / "pilots.json"
        legacy.write_text('{"hpc": ["81234"], "bad": "x"}')
        store = await Store.open(tmp_path / "queue.db")
        try:
            assert await PilotIds(store, legacy).load() == {"hpc": ["81234"]}
            assert not legacy.exists()
            assert await PilotIds(store, legacy).load() == {"hpc": ["81234"]}
        finally:
            await store.close()

    anyio.run(main)
