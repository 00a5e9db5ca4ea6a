"""Checkpoints pulled on demand and synced by changed bytes, through the real CLI on
sshd nodes (scaled down for a shared 2-core machine: ten 20 MiB checkpoints)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nvq_runner.fusemount import clean_stale, fuse_mounts, unavailable
from tests.daemon.test_machines_come_and_go import _die, _index, mesh
from tests.daemon.test_ssh_nodes import ONE_CARD, _until

__all__ = ["mesh"]
MiB = 1024 * 1024
FAST_SYNC = 'artifact_sync = "300s"'  # only the syncs the test asks for (and final ones)



@pytest.fixture(autouse=True)
def no_mounts_left(tmp_path: Path) -> Iterator[None]:
    """A node taken away (or shut down) with artifacts mounted leaves the mount dead:
    take it down after the test, as a restarted runner would."""
    yield
    clean_stale(tmp_path)


needs_fuse = pytest.mark.skipif(unavailable() is not None, reason=f"FUSE: {unavailable()}")

# First attempt: ten random checkpoints and a `latest` pointer, a sync, then wait to be
# moved. Later attempts: resume from the newest (its hash goes to a ledger), add a file,
# and wait to be moved again, or end when the file of a previous later attempt is there.
TRAIN = """
A="$NVQ_ARTIFACTS"
if [ -f "$A/latest" ]; then
  n=$(cat "$A/latest")
  echo "$NVQ_NODE $(sha256sum < "$A/ckpt/$n.pt" | cut -c1-64)" >> {ledger}
  if [ -f "$A/after-move" ]; then cat "$A/after-move" >> {ledger}; exit 0; fi
  echo "written on $NVQ_NODE" > "$A/after-move"
  touch "$A/.sync"; sleep 600
fi
mkdir -p "$A/ckpt"
for i in 0 1 2 3 4 5 6 7 8 9; do
  head -c 20971520 /dev/urandom > "$A/ckpt/$i.tmp" && mv "$A/ckpt/$i.tmp" "$A/ckpt/$i.pt"
done
echo 9 > "$A/latest"
echo "first $(sha256sum < "$A/ckpt/9.pt" | cut -c1-64)" >> {ledger}
touch "$A/.sync"; sleep 600
"""


def syncs(nvq: Any, job_id: int) -> list[dict[str, Any]]:
    return nvq.show(job_id).get("artifact_syncs") or []


def synced(nvq: Any, job_id: int, attempt: int, min_bytes: int = 0) -> dict[str, Any]:
    found: list[dict[str, Any]] = []

    def ready() -> bool:
        found[:] = [s for s in syncs(nvq, job_id)
                    if s["attempt"] == attempt and s["bytes"] >= min_bytes]
        return bool(found)

    _until(ready, timeout=90, what=f"a sync of attempt {attempt}")
    return found[-1]


def move(nvq: Any, nodes: list[Any], job_id: int, attempt: int) -> str:
    """Take the job's node away; returns the node it ran on."""
    node = nvq.show(job_id)["node"]
    _die(nodes[_index(node)])
    nvq.wait_for(job_id, lambda j: j["attempt"] == attempt + 1 and j["state"] == "running",
                 timeout=90)  # node_grace, then 200 MiB restored on a busy machine
    return str(node)


@needs_fuse
def test_a_moved_job_reads_only_its_newest_checkpoint_and_its_writes_follow_it(
    mesh: Any, tmp_path: Path,
) -> None:
    nvq, nodes = mesh(3, gpus=ONE_CARD, queue_extra=FAST_SYNC)
    ledger = tmp_path / "ledger"
    job = nvq.submit("--vram", "20GiB", "--", TRAIN.format(ledger=ledger))["id"]
    nvq.wait_for(job, lambda j: j["state"] == "running")
    first = synced(nvq, job, 1, min_bytes=200 * MiB)
    assert first["files"] == 11 and first["sent"] >= 200 * MiB
    move(nvq, nodes, job, 1)
    second = synced(nvq, job, 2, min_bytes=200 * MiB)
    # counted at the runner: the newest checkpoint and `latest`, not the other 180 MiB
    assert second["mode"] == "mounted"
    assert 20 * MiB <= second["fetched"] < 22 * MiB
    assert second["sent"] < MiB  # only `after-move` was new
    lines = ledger.read_text().splitlines()
    assert lines[1].split()[1] == lines[0].split()[1]  # resumed from the same bytes
    where = move(nvq, nodes, job, 2)
    code, (done,) = nvq.wait(job, timeout=120)
    assert code == 0 and done["state"] == "completed"
    assert ledger.read_text().splitlines()[-1] == f"written on {where}"
    text = nvq.ok("job", "show", str(job)).out
    assert "artifact syncs" in text and "on demand" in text and "    attempt 2 " in text


@needs_fuse
def test_with_lazy_artifacts_off_the_job_gets_everything_first_with_a_note(
    mesh: Any, tmp_path: Path,
) -> None:
    nvq, nodes = mesh(2, gpus=ONE_CARD, queue_extra=FAST_SYNC)
    config = nvq.home / "config.toml"  # read when the daemon starts, on the first call
    config.write_text(config.read_text().replace(
        'name = "n1"\n', 'name = "n1"\nlazy_artifacts = false\n').replace(
        'name = "n0"\n', 'name = "n0"\nlazy_artifacts = false\n'))
    ledger = tmp_path / "ledger"
    job = nvq.submit("--vram", "20GiB", "--", TRAIN.format(ledger=ledger))["id"]
    nvq.wait_for(job, lambda j: j["state"] == "running")
    synced(nvq, job, 1, min_bytes=200 * MiB)
    moved_to = nvq.show(job)["node"]
    move(nvq, nodes, job, 1)
    second = synced(nvq, job, 2, min_bytes=200 * MiB)
    assert second["mode"] == "restored"
    assert second["fetched"] >= 200 * MiB
    new_node = nvq.show(job)["node"]
    assert new_node != moved_to
    note = (f"artifacts restored in full: FUSE not available on {new_node} "
            "(lazy_artifacts = false)")
    assert note in nvq.ok("job", "show", str(job)).out
    assert note in nvq.show(job)["artifact_notes"]


def test_a_checkpoint_changed_by_one_percent_syncs_about_one_percent(
    mesh: Any, tmp_path: Path,
) -> None:
    nvq, _ = mesh(1, gpus=ONE_CARD, queue_extra=FAST_SYNC)
    gate = tmp_path / "rewrite"
    body = (
        'A="$NVQ_ARTIFACTS"; head -c 20971520 /dev/urandom > "$A/ckpt.pt"; touch "$A/.sync"; '
        f'while [ ! -f {gate} ]; do sleep 0.1; done; '
        # 1 % of the checkpoint rewritten in place (new random bytes at 10 MiB)
        # in one write, so that a periodic sync cannot catch it half done
        'P=$(mktemp); head -c 209715 /dev/urandom > "$P"; '
        'dd if="$P" of="$A/ckpt.pt" bs=209715 seek=50 conv=notrunc 2>/dev/null; '
        'rm "$P"; touch "$A/.sync"; sleep 600'
    )
    job = nvq.submit("--vram", "20GiB", "--", body)["id"]
    first = synced(nvq, job, 1, min_bytes=20 * MiB)
    assert first["sent"] >= 20 * MiB
    gate.touch()
    _until(lambda: len(syncs(nvq, job)) >= 2, timeout=90, what="the second sync")
    second = syncs(nvq, job)[-1]
    assert second["bytes"] == 20 * MiB
    assert 200 * 1024 <= second["sent"] <= 2 * MiB  # ≈ 1 %, plus a chunk each side
    assert second["dedup_ratio"] >= 10
    nvq.ok("job", "cancel", str(job))


@needs_fuse
def test_a_runner_killed_with_a_live_mount_mounts_it_afresh_after_its_restart(
    mesh: Any, tmp_path: Path,
) -> None:
    nvq, nodes = mesh(3, gpus=ONE_CARD, queue_extra=FAST_SYNC)
    ledger = tmp_path / "ledger"
    job = nvq.submit("--vram", "20GiB", "--", TRAIN.format(ledger=ledger))["id"]
    nvq.wait_for(job, lambda j: j["state"] == "running")
    synced(nvq, job, 1, min_bytes=200 * MiB)
    move(nvq, nodes, job, 1)
    synced(nvq, job, 2)  # `after-move` is written
    node = nodes[_index(nvq.show(job)["node"])]
    assert len(fuse_mounts(node.home)) == 1
    pid_file = node.home / "runner.pid"
    old = int(pid_file.read_text())
    os.kill(old, signal.SIGKILL)

    def restarted() -> bool:
        try:
            return int(pid_file.read_text()) != old
        except (OSError, ValueError):
            return False

    _until(restarted, timeout=90, what="the runner's restart")
    # the dead mount is gone and the job, still running, has its artifacts again

    def live_again() -> bool:
        points = fuse_mounts(node.home)
        if len(points) != 1:
            return False
        try:
            return sorted(os.listdir(points[0])) == ["after-move", "ckpt", "latest"]
        except OSError:
            return False

    _until(live_again, timeout=30, what="the artifacts mounted again")
    nvq.ok("job", "cancel", str(job))
    _until(lambda: fuse_mounts(node.home) == [], timeout=30, what="the unmount at the end")
