"""A job's code reaching an sshd node: submit of a generated project (first time and
again unchanged), and the time from dispatch to the job's first instruction with a
cold node cache (every blob crosses the link), a warm one (nothing crosses; the
working copy is linked from the cache), and after editing one file.

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import time

from common import emit, machine, queue, wait_nodes_up
from snapshot import generate

from tests.cluster import Nvq

STAMP = 'printf "%s\\n" "$EPOCHREALTIME" > {log}'


def dispatch_to_first(nvq: Nvq, tag: str) -> tuple[float, float]:
    """(seconds the submit took, seconds from dispatch to the first instruction)."""
    log = nvq.home.parent / f"first-{tag}"
    started = time.perf_counter()
    job = nvq.submit("--vram", "1GiB", "--", STAMP.format(log=log))
    submitted = time.perf_counter() - started
    code, (done,) = nvq.wait(job["id"], timeout=600)
    assert code == 0, done
    first = float(log.read_text().split()[0])
    return submitted, first - done["dispatched_at"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=50)
    parser.add_argument("--files", type=int, default=2000)
    args = parser.parse_args()
    with queue("ssh") as nvq:
        wait_nodes_up(nvq)
        assert nvq.cwd is not None
        generate(nvq.cwd, args.mib, args.files)
        submit_first, cold = dispatch_to_first(nvq, "cold")
        submit_again, warm = dispatch_to_first(nvq, "warm")
        (nvq.cwd / "pkg0" / "mod0" / "file0.py").write_text("edited = True\n")
        submit_edited, edited = dispatch_to_first(nvq, "edited")
        emit({
            "bench": "world_dispatch",
            "machine": machine(),
            "project_mib": args.mib,
            "files": args.files,
            "submit_first_s": round(submit_first, 3),
            "submit_unchanged_s": round(submit_again, 3),
            "submit_one_file_edited_s": round(submit_edited, 3),
            "dispatch_to_first_instruction_ms": {
                "cold_cache": round(cold * 1000, 1),
                "warm_cache": round(warm * 1000, 1),
                "one_file_edited": round(edited * 1000, 1),
            },
        })


if __name__ == "__main__":
    main()
