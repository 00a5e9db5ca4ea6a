"""A job body for the fake GPU backend: "use" N MiB on each card in
CUDA_VISIBLE_DEVICES for S seconds.

    python -m nvq_runner.fakeload --mib N --seconds S [--until-sampled] [--oom]

It registers itself as `<NVQ_FAKE_GPUS>.load/<pid>.json`, which the fake backend
reads on every sample; without NVQ_FAKE_GPUS it just sleeps.

`--until-sampled`: the S seconds start once its runner has counted the memory in the
attempt's peak (`$NVQ_JOB_DIR/peak_vram.json`, vram_peaks.py), so a test knows the
peak without waiting for time. `--oom` allocates as CUDA does: where a card has less
than N MiB free (its size less what the other processes hold), the job takes what is
free, is sampled, then fails as PyTorch does, with `torch.OutOfMemoryError: CUDA out
of memory` on stderr and exit code 1.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from types import FrameType

from .gpu.fake import FakeBackend, load_dir


def _cards() -> list[int]:
    raw = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    # A fake MIG instance is named MIG-fake-<unit> (gpu/fake.py).
    ids = [c.strip().removeprefix("MIG-fake-") for c in raw.split(",")]
    return [int(c) for c in ids if c.isdigit()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nvq_runner.fakeload")
    parser.add_argument("--mib", type=int, required=True)
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--until-sampled", action="store_true")
    parser.add_argument("--oom", action="store_true")
    args = parser.parse_args(argv)

    def on_term(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_term)
    fake = os.environ.get("NVQ_FAKE_GPUS")
    record = None
    mib, short = args.mib, False
    if fake and args.oom:
        free = _free(fake, _cards())
        short = free < mib
        mib = min(mib, free)
    if fake:
        directory = load_dir(fake)
        directory.mkdir(parents=True, exist_ok=True)
        record = directory / f"{os.getpid()}.json"
        tmp = directory / f".{os.getpid()}.tmp"
        tmp.write_text(json.dumps({"pid": os.getpid(), "gpus": _cards(), "mib": mib}))
        os.replace(tmp, record)
    try:
        if fake and (args.until_sampled or short):
            _until_sampled(mib)
        if short:
            print(
                f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
                f"{(args.mib - mib) / 1024:.2f} GiB. GPU 0 has a total capacity of "
                f"{mib / 1024:.2f} GiB of which 0 bytes is free.",
                file=sys.stderr,
            )
            return 1
        time.sleep(args.seconds)
    finally:
        if record is not None:
            record.unlink(missing_ok=True)
    return 0


def _free(fake: str, cards: list[int]) -> int:
    """The least MiB free on any of `cards`, as the fake backend sees them now."""
    samples = {g.index: g for g in FakeBackend(fake).sample()}
    frees = [samples[c].total_mb - samples[c].used_mb for c in cards if c in samples]
    return max(0, min(frees)) if frees else 0


def _until_sampled(mib: int) -> None:
    """Until the runner's peak for this attempt has counted `mib` on some card (a
    runner too old to keep peaks never does: give up after a minute)."""
    path = os.path.join(os.environ.get("NVQ_JOB_DIR", "."), "peak_vram.json")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with open(path) as f:
                cards = json.load(f).get("cards", {})
            if any(int(v) >= mib for v in cards.values()):
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.05)


if __name__ == "__main__":
    sys.exit(main())
