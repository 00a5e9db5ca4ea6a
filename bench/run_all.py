"""`make bench`: run every benchmark in bench/, each printing one JSON line, then a table."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# Sized so that all of them finish in about 15 minutes on 2 cores.
BENCHES: list[list[str]] = [
    ["latency.py", "--pairs", "50", "--runs", "30"],
    ["throughput.py", "--jobs", "5000", "--cli-calls", "20"],
    ["array_drain.py", "--members", "100000", "--window", "2000"],
    ["placement_pass.py", "exit", "--pending", "100000", "--exits", "200"],
    ["placement_pass.py", "shapes", "--pending", "10000", "--shapes", "100"],
    ["cli_latency.py", "--runs", "10"],
    ["cli_startup.py", "--runs", "30"],
    ["remote_latency.py", "--runs", "20"],
    ["mcp_latency.py", "--runs", "20"],
    ["scale.py", "--nodes", "256", "--pending", "10000", "--window", "20"],
    ["recovery.py", "--jobs", "500"],
    ["nvidb_compare.py"],
    ["web_latency.py", "--runs", "30"],
    ["tui_latency.py", "--jobs", "10000", "--runs", "20"],
    ["live_views.py", "--jobs", "1000", "--viewers", "0,1,10,50", "--window", "20"],
    ["event_stream.py", "latency", "--runs", "30"],
    ["event_stream.py", "followers", "--followers", "100", "--jobs", "100", "--rounds", "2"],
    ["snapshot.py", "--mib", "200"],
    ["world_dispatch.py", "--mib", "50"],
    ["big_queue.py", "--jobs", "1000000", "--runs", "10"],
    ["chunking.py", "--mib", "256"],
    ["blob_cache.py"],
    ["lazy_artifacts.py", "--files", "10", "--mib", "50"],
    ["pilot_scaling.py"],
    ["slurm_pilot.py", "--runs", "3", "--jobs", "100", "--setup-seconds", "40"],
    ["image_staging.py", "--mib", "200"],
]


def flatten(doc: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in doc.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


def main() -> None:
    rows: list[tuple[str, str, Any]] = []
    failed = 0
    for argv in BENCHES:
        started = time.monotonic()
        proc = subprocess.run([sys.executable, str(HERE / argv[0]), *argv[1:]],
                              capture_output=True, text=True, cwd=HERE)
        took = time.monotonic() - started
        if proc.returncode != 0:
            failed += 1
            print(f"{argv[0]} failed ({proc.returncode}):\n{proc.stderr[-2000:]}", file=sys.stderr)
            continue
        line = proc.stdout.strip().splitlines()[-1]
        print(line)
        doc = json.loads(line)
        name = doc.pop("bench", argv[0])
        doc.pop("machine", None)
        for key, value in flatten(doc).items():
            rows.append((name, key, value))
        rows.append((name, "wall_s", round(took, 1)))
    width = max((len(f"{b}  {k}") for b, k, _ in rows), default=10)
    print()
    for bench, key, value in rows:
        print(f"{bench}  {key}".ljust(width + 2), value)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
