"""What a sync sends when a checkpoint changes: content-defined chunks (chunking.py)
against fixed 4 MiB chunks, for a random `--mib` checkpoint (model weights look
random) changed four ways: 1 % appended, 1 % rewritten in one span, 1 % rewritten in
ten spans, and 100 bytes inserted near the start (a header that grew). For each, the
bytes whose chunks the queue host lacks, as a share of the file, and how fast the file
is chunked and hashed. In process, no queue. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import io
import random
import time
from collections.abc import Callable, Iterator
from typing import BinaryIO

from common import emit, machine

from nvq_runner.chunking import chunks, digest, fixed_chunks

Chunker = Callable[[BinaryIO], Iterator[bytes]]


def randbytes(rng: random.Random, n: int) -> bytes:
    # Random.randbytes refuses more than 256 MiB at once
    step = 64 * 1024 * 1024
    return b"".join(rng.randbytes(min(step, n - at)) for at in range(0, n, step))


def cases(data: bytes) -> dict[str, bytes]:
    rng = random.Random(2)
    n = len(data)
    one = n // 100
    mid = n // 2
    spans = bytearray(data)
    for i in range(10):
        at = (i * n) // 10 + n // 20
        spans[at:at + one // 10] = randbytes(rng, one // 10)
    return {
        "append_1pct": data + randbytes(rng, one),
        "rewrite_1pct_one_span": data[:mid] + randbytes(rng, one) + data[mid + one:],
        "rewrite_1pct_ten_spans": bytes(spans),
        "insert_100_bytes": data[:4096] + randbytes(rng, 100) + data[4096:],
    }


def sent(chunker: Chunker, before: bytes, after: bytes) -> float:
    have = {digest(c) for c in chunker(io.BytesIO(before))}
    new = sum(len(c) for c in chunker(io.BytesIO(after)) if digest(c) not in have)
    return round(100 * new / len(after), 2)


def resync_kib(trials: int) -> dict[str, int]:
    """How far the boundaries run out of step after a rewrite: a 20 MiB checkpoint with
    1 % (one span at 10 MiB) rewritten, `trials` times with fresh random bytes; the
    KiB a sync would send, median and worst (the figure the sync tests bound)."""
    rng = random.Random(3)
    size, span, at = 20 * 1024 * 1024, 209_715, 10 * 1024 * 1024
    got = []
    for _ in range(trials):
        before = randbytes(rng, size)
        after = before[:at] + randbytes(rng, span) + before[at + span:]
        got.append(round(sent(chunks, before, after) * size / 100 / 1024))
    got.sort()
    return {"p50": got[len(got) // 2], "max": got[-1]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=1024)
    parser.add_argument("--trials", type=int, default=100, help="rewrites of a 20 MiB file")
    args = parser.parse_args()
    data = randbytes(random.Random(1), args.mib * 1024 * 1024)
    started = time.perf_counter()
    count = sum(1 for _ in map(digest, chunks(io.BytesIO(data))))
    elapsed = time.perf_counter() - started
    out: dict[str, object] = {
        "bench": "chunking", "mib": args.mib, **machine(),
        "cdc_chunks": count, "cdc_avg_kib": round(len(data) / count / 1024),
        "cdc_chunk_and_hash_mib_s": round(args.mib / elapsed),
    }
    for name, after in cases(data).items():
        out[f"{name}_sent_pct"] = {
            "cdc": sent(chunks, data, after),
            "fixed_4mib": sent(fixed_chunks, data, after),
        }
    out["rewrite_1pct_of_20mib_sent_kib"] = resync_kib(args.trials)
    emit(out)


if __name__ == "__main__":
    main()
