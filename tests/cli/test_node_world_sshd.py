"""What a node's own config adds to a job's world, on an sshd node through the real
CLI: `[[nodes]] setup` (run before each job's --setup, cached with it) and
`[[nodes]] cache_size` (the node's blob cache keeps under it, least recently used
first)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_job_world import logs
from tests.cluster import Nvq
from tests.harness.sshd import SshdNode


def with_node_keys(nvq: Nvq, **keys: str) -> None:
    lines = "".join(f"{key} = {json.dumps(value)}\n" for key, value in keys.items())
    config = (nvq.home / "config.toml").read_text()
    nvq.write_config(config.replace('name = "n0"\n', f'name = "n0"\n{lines}'))


def test_node_setup_runs_once_and_before_the_jobs_own(
    remote: tuple[Nvq, SshdNode], tmp_path: Path,
) -> None:
    nvq, _node = remote
    count = tmp_path / "setups"
    with_node_keys(nvq, setup=(
        'mkdir -p "$NVQ_ENV_DIR/bin"; '
        "printf '#!/bin/sh\\necho node-tool\\n' > \"$NVQ_ENV_DIR/bin/nodetool\"; "
        f'chmod +x "$NVQ_ENV_DIR/bin/nodetool"; echo node >> {count}'
    ))
    ids = [nvq.submit("--gpus", "0", "--", "nodetool")["id"] for _ in range(3)]
    code, done = nvq.wait(*ids, timeout=120)
    assert code == 0, done
    assert count.read_text() == "node\n"
    assert "node-tool" in logs(nvq, ids[0])

    # with a --setup of its own: the node's runs first, then the job's, as a new key
    job = nvq.submit("--gpus", "0", "--setup", f"echo job >> {count}", "--", "nodetool")
    assert nvq.wait(job["id"])[0] == 0
    assert count.read_text() == "node\nnode\njob\n"
    assert "node-tool" in logs(nvq, job["id"])


def test_node_cache_size_evicts_least_recently_used(
    remote: tuple[Nvq, SshdNode], tmp_path: Path,
) -> None:
    nvq, node = remote
    with_node_keys(nvq, cache_size="1MiB")
    first, second = tmp_path / "first", tmp_path / "second"
    for project, byte in ((first, b"a"), (second, b"b")):
        project.mkdir()
        (project / "data.bin").write_bytes(byte * 700 * 1024)
    cache = node.home / "cache" / "objects"

    def cached() -> dict[str, int]:
        return {p.parent.name + p.name: p.stat().st_size for p in cache.rglob("*")
                if p.is_file()}

    for project in (first, second):
        nvq.cwd = project
        job = nvq.submit("--gpus", "0", "--", "wc -c < data.bin")
        assert nvq.wait(job["id"])[0] == 0
        assert logs(nvq, job["id"]).strip() == str(700 * 1024)
    held = cached()
    assert sum(held.values()) <= 1024 * 1024
    sizes = sorted(held.values())
    assert sizes[-1] == 700 * 1024 and sizes[-2] < 700 * 1024  # the first's data went
