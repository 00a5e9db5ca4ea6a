"""Who holds a card whole. A job that asks for cards without saying how much memory
(`--gpus 1`, no `--vram`) gets whole cards, as Slurm gives a whole GPU per GPU asked
for: no other queue job is placed on them while it runs, and it starts only on cards
no queue job is on. `[queue] share_cards = true` restores stacking: such jobs then
reserve no memory and share cards with anyone. A job with `--vram` shares its cards
by the memory it reserved, and a lane job runs on the card its lane names (the lane
orders its jobs there), so neither holds a card whole."""

from __future__ import annotations

from nvq.model import JobRecord


def holds_whole(job: JobRecord, share_cards: bool) -> bool:
    spec = job.spec
    if spec.quiet and spec.gpus > 0 and spec.lane is None:
        return True  # --quiet: nothing else on its cards, whatever it reserved
    return not share_cards and spec.gpus > 0 and spec.vram_mb == 0 and spec.lane is None
