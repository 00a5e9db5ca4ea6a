"""Each attempt's record of what shared its cards, through the real CLI: `job show`
and `--json` carry it (fake cards with a foreign process)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.cluster import Nvq

BUSY_CARD = """\
cuda = "13.0"

[[gpu]]
name = "Fake A100"
memory = "24GiB"
util = 95
[[gpu.process]]
pid = 4242
user = "alice"
used = "1GiB"
"""
# beside it, a card too small for 20 GiB, or one as large
CARDS = BUSY_CARD + '\n[[gpu]]\nname = "Fake A10"\nmemory = "16GiB"\nutil = 0\n'
BUSY_AND_FREE = BUSY_CARD + '\n[[gpu]]\nname = "Fake A100"\nmemory = "24GiB"\nutil = 0\n'


def sampled(nvq: Nvq) -> None:
    """Wait until the node reports alice's process on card 0."""
    deadline = time.monotonic() + 60
    while True:
        (node,) = nvq.json("queue", "nodes")["nodes"]
        if len(node["gpus"]) == 2 and node["gpus"][0]["external_mem_mb"]:
            return
        assert time.monotonic() < deadline, node
        time.sleep(0.1)


def ran(nvq: Nvq, tmp_path: Path, name: str, *args: str) -> dict[str, Any]:
    """A job that runs until the queue has seen it in a sample (its progress line),
    then ends: its one attempt's record."""
    go = tmp_path / name
    script = f'echo seen > "$NVQ_STATUS_FILE"; while [ ! -e {go} ]; do sleep 0.05; done'
    job = nvq.submit(*args, "--", script)["id"]
    nvq.wait_for(job, lambda j: j["progress"] == "seen")
    go.touch()
    code, _ = nvq.wait(job)
    assert code == 0
    return nvq.json("job", "show", str(job))  # type: ignore[no-any-return]


def test_each_attempt_records_what_shared_its_cards(nvq: Nvq, tmp_path: Path) -> None:
    nvq.write_gpus(CARDS)
    sampled(nvq)
    # 20 GiB fits only beside alice's process, on the busy card
    busy = ran(nvq, tmp_path, "busy", "--vram", "20GiB")
    assert busy["gpus"] == [0]
    (attempt,) = busy["attempts"]
    record = attempt["contention"]
    assert record["samples"] >= 1 and record["quiet"] is False
    assert (record["foreign_util_p50"], record["foreign_util_p95"]) == (95, 95)
    assert (record["foreign_mem_p50_mb"], record["foreign_mem_p95_mb"]) == (1024, 1024)
    assert record["shared_with"] == []
    text = nvq.ok("job", "show", str(busy["id"])).out
    assert "shared: foreign util p50 95% p95 95%, foreign memory p50 1GiB p95 1GiB (" in text

    # a small job takes the quiet card: nothing else was on it
    quiet = ran(nvq, tmp_path, "quiet", "--vram", "2GiB")
    assert quiet["gpus"] == [1]
    record = quiet["attempts"][0]["contention"]
    assert record["quiet"] is True and record["foreign_util_p95"] == record["foreign_mem_p95_mb"] == 0
    assert "quiet: nothing else on its cards (" in nvq.ok("job", "show", str(quiet["id"])).out


def test_quiet_waits_for_a_card_with_nothing_else_and_keeps_it(nvq: Nvq, tmp_path: Path) -> None:
    nvq.write_gpus(BUSY_AND_FREE)
    sampled(nvq)
    go1, go2 = tmp_path / "go1", tmp_path / "go2"
    occupant = nvq.submit("--vram", "4GiB", "--", f"while [ ! -e {go1} ]; do sleep 0.05; done")["id"]
    assert nvq.wait_for(occupant, lambda j: j["state"] == "running")["gpus"] == [1]

    script = f'echo seen > "$NVQ_STATUS_FILE"; while [ ! -e {go2} ]; do sleep 0.05; done'
    quiet = nvq.submit("--quiet", "--vram", "4GiB", "--", script)["id"]
    waits = nvq.wait_for(quiet, lambda j: j["reason"] == "Resources")
    said = ("0 of its GPUs have nothing else on them, needs 1 (--quiet; queue jobs on 1, "
            "processes the queue did not start on 1)")
    assert waits["reason_detail"] == f"local: {said}" and waits["quiet"] is True
    checks = nvq.json("job", "why", str(quiet))["nodes"][0]["checks"]
    assert {"constraint": "quiet cards", "ok": False, "detail": said} in checks
    assert f"quiet cards: {said}" in nvq.ok("job", "why", str(quiet)).out

    go1.touch()
    running = nvq.wait_for(quiet, lambda j: j["progress"] == "seen")
    assert running["gpus"] == [1]
    # held whole: a job that would fit beside it goes to the busy card instead
    other = nvq.submit("--vram", "2GiB", "--", "true")["id"]
    code, (done,) = nvq.wait(other)
    assert code == 0 and done["gpus"] == [0]

    go2.touch()
    code, _ = nvq.wait(quiet)
    assert code == 0
    (attempt,) = nvq.json("job", "show", str(quiet))["attempts"]
    assert attempt["contention"]["quiet"] is True and attempt["contention"]["shared_with"] == []


def test_quiet_from_a_manifest(nvq: Nvq, tmp_path: Path) -> None:
    manifest = tmp_path / "job.toml"
    manifest.write_text('[job]\ncommand = "true"\nquiet = true\n')
    job = nvq.submit("--manifest", str(manifest))
    assert job["quiet"] is True
    assert nvq.wait(job["id"])[0] == 0
