"""A container image reaching an sshd node that cannot pull it: `nvq image push REF
--nodes n0` of an image with `--mib` MiB of random content (incompressible), from the
queue host's rootful Podman to the node's own store (no registry).

`first_push_s`: the CLI call end to end, the first time: `podman save` on the queue
host into the blob store, every chunk over the node's link, `podman load` there.
`node_fetch_and_load_s` is the node's share of it, as its runner timed it.
`unchanged_push_s`: the same call again, nothing changed: nothing is saved (the
archive is known by image id), nothing is sent (the node's store has the image).
`reload_from_node_cache_s`: after the image is removed from the node's store only,
its chunks still in the node's blob cache: a load without a transfer.
`changed_push_s`, `changed_sent_mib`: a new version of the image under the same name
(one more 1 MiB file): content-defined chunks send what changed, about that MiB.

Needs rootful Podman (`make parts`). Prints one JSON line.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from common import emit, machine

from tests.cluster import Nvq, make_nvq, write_mesh_config
from tests.harness.podman import IMAGE, PodmanStore, podman_missing
from tests.harness.sshd import start_sshd_nodes


def push(nvq: Nvq) -> tuple[float, dict[str, object]]:
    started = time.perf_counter()
    run = nvq.run("image", "push", IMAGE, "--nodes", "n0", "--json", timeout=3600)
    took = time.perf_counter() - started
    assert run.code == 0, run.out + run.err
    (node,) = run.json()["nodes"]
    return took, node


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=200)
    args = parser.parse_args()
    why = podman_missing()
    if why is not None:
        raise SystemExit(f"image_staging: {why}")
    tmp = Path(tempfile.mkdtemp(prefix="nvq-bench-image-"))
    host = PodmanStore(tmp / "podman-host")
    store = PodmanStore(tmp / "podman-node")
    nodes = []
    nvq = make_nvq(tmp / "q")
    try:
        data = host.dir / "rootfs" / "data"
        data.mkdir(parents=True)
        with (data / "weights.bin").open("wb") as f:
            for _ in range(args.mib):
                f.write(os.urandom(1024 * 1024))
        host.build_busybox()
        nodes = start_sshd_nodes(tmp / "sshd", 1)
        nvq.env.update(host.env)
        write_mesh_config(nvq, nodes, keepalive="5s")
        config = (nvq.home / "config.toml").read_text()
        runner_env = "".join(f'{k} = "{v}"\n' for k, v in store.env.items())
        nvq.write_config(config.replace('NVQ_GPU_BACKEND = "fake"\n',
                                        'NVQ_GPU_BACKEND = "fake"\n' + runner_env))
        nvq.ok("queue", "status")
        first, node = push(nvq)
        assert node["loaded"], node
        again, unchanged = push(nvq)
        assert not unchanged["loaded"] and unchanged["fetched_bytes"] == 0, unchanged
        store.podman("rmi", "-f", IMAGE)
        reload, cached = push(nvq)
        assert cached["loaded"] and cached["fetched_bytes"] == 0, cached
        # A new version under the same name: one more 1 MiB file in the image.
        (data / "notes.bin").write_bytes(os.urandom(1024 * 1024))
        host.build_busybox()
        changed, new = push(nvq)
        assert new["loaded"], new
        emit({
            "bench": "image_staging",
            "machine": machine(),
            "image_mib": args.mib,
            "sent_mib": round(int(node["fetched_bytes"]) / 2**20, 1),  # type: ignore[call-overload]
            "first_push_s": round(first, 2),
            "node_fetch_and_load_s": node["seconds"],
            "unchanged_push_s": round(again, 2),
            "reload_from_node_cache_s": round(reload, 2),
            "changed_push_s": round(changed, 2),
            "changed_sent_mib": round(int(new["fetched_bytes"]) / 2**20, 1),  # type: ignore[call-overload]
        })
    finally:
        nvq.shutdown()
        for n in nodes:
            n.close()
        store.close()
        host.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
