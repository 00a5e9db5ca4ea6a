"""The rule for GPU jobs without `--vram`, through the real CLI: `--gpus N` alone
holds N whole cards (as Slurm gives whole GPUs) and nothing stacks on them;
`[queue] share_cards = true` lets such jobs share. A GPU-hour limit holds GPU jobs
only."""

from __future__ import annotations

from pathlib import Path

from tests.cluster import Nvq


def _running(nvq: Nvq, *ids: int) -> list[bool]:
    return [nvq.show(i)["state"] == "running" for i in ids]


def test_gpus_without_vram_hold_whole_cards_unless_the_queue_shares(
    nvq: Nvq, tmp_path: Path
) -> None:
    nvq.ok("queue", "status")
    first, second = (nvq.submit("--gpus", "1", "--", "sleep 600") for _ in range(2))
    for job in (first, second):
        nvq.wait_for(job["id"], lambda j: j["state"] == "running")
    cards = {nvq.show(first["id"])["gpus"][0], nvq.show(second["id"])["gpus"][0]}
    assert cards == {0, 1}  # one whole card each
    third = nvq.submit("--gpus", "1", "--", "sleep 600")
    small = nvq.submit("--gpus", "1", "--vram", "1GiB", "--", "sleep 600")
    cpu = nvq.submit("--gpus", "0", "--", "true")
    assert nvq.wait(cpu["id"])[0] == 0  # a CPU job needs no card
    for job in (third, small):
        shown = nvq.wait_for(job["id"], lambda j: j["reason"] == "Resources")
        assert shown["state"] == "pending", shown
    for job in (third, small):
        why = nvq.ok("job", "why", str(job["id"])).out
        assert "2 of its 2 GPUs are held whole by jobs without --vram, 0 left" in why, why

    # Sharing: the same jobs stack on the cards.
    nvq.write_config("[queue]\nshare_cards = true\n")
    nvq.ok("daemon", "reload")
    for job in (third, small):
        nvq.wait_for(job["id"], lambda j: j["state"] == "running")
    assert _running(nvq, first["id"], second["id"]) == [True, True]
    nvq.ok("job", "cancel", "--mine")


def test_a_gpu_hour_limit_holds_gpu_jobs_only(nvq: Nvq) -> None:
    nvq.write_config("[limits]\nmax_gpu_hours = 0.0001\n")  # 0.36 GPU-seconds a day
    used = nvq.submit("--gpus", "1", "--", "sleep 1")
    assert nvq.wait(used["id"])[0] == 0
    gpu = nvq.submit("--gpus", "1", "--", "true")
    assert nvq.wait_for(gpu["id"], lambda j: j["reason"] == "QuotaHours")["state"] == "pending"
    cpu = nvq.submit("--gpus", "0", "--", "echo cpu")
    code, (done,) = nvq.wait(cpu["id"])
    assert code == 0 and done["state"] == "completed", done
    nvq.ok("job", "cancel", str(gpu["id"]))
