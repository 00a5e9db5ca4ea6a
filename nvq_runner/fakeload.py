"""A job body for the fake GPU backend: "use" N MiB on each card in
CUDA_VISIBLE_DEVICES for S seconds.

    python -m nvq_runner.fakeload --mib N --seconds S

It registers itself as `<NVQ_FAKE_GPUS>.load/<pid>.json`, which the fake backend
reads on every sample; without NVQ_FAKE_GPUS it just sleeps.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from types import FrameType

from .gpu.fake import load_dir


def _cards() -> list[int]:
    raw = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    # A fake MIG instance is named MIG-fake-<unit> (gpu/fake.py).
    ids = [c.strip().removeprefix("MIG-fake-") for c in raw.split(",")]
    return [int(c) for c in ids if c.isdigit()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nvq_runner.fakeload")
    parser.add_argument("--mib", type=int, required=True)
    parser.add_argument("--seconds", type=float, required=True)
    args = parser.parse_args(argv)

    def on_term(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_term)
    fake = os.environ.get("NVQ_FAKE_GPUS")
    record = None
    if fake:
        directory = load_dir(fake)
        directory.mkdir(parents=True, exist_ok=True)
        record = directory / f"{os.getpid()}.json"
        tmp = directory / f".{os.getpid()}.tmp"
        tmp.write_text(json.dumps({"pid": os.getpid(), "gpus": _cards(), "mib": args.mib}))
        os.replace(tmp, record)
    try:
        time.sleep(args.seconds)
    finally:
        if record is not None:
            record.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
