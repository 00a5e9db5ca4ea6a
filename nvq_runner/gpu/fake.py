"""The fake GPU backend: cards described by a TOML file, re-read on every sample so a
test can change them live, plus the `fakeload` processes that registered themselves
next to it.

    cuda = "13.0"
    blind = true            # optional: processes are named without their memory
    [[gpu]]
    name = "A100"
    memory = "80GiB"
    util = 35               # optional
    [[gpu.process]]         # work the queue did not start
    pid = 4242
    user = "alice"
    used = "10GiB"

MIG, per [[gpu]]: `mig = [{ profile = "3g.40gb", memory = "40GiB" }, ...]` splits the
card into instances, each a placement unit of its own (numbered across the node, in
order), named `MIG-fake-<unit>` in CUDA_VISIBLE_DEVICES; the card's health is theirs.

Card health, injected per [[gpu]] (gpu/health.py judges it): `xid = 79` (or a list),
`ecc_dbe = 1`, `retired_pending = true`, `lost = true`, and `nvml_hang = true`, which
makes the card's health read hang for real (it returns once the line is gone), as a
wedged driver's call would. `slow_init = 4` (top level, seconds) makes the first read
of the cards take that long, as a slow driver's first `nvmlInit` does: the runner's
hello comes that much later (`make test-late-nodes` runs the suite so).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Collection
from pathlib import Path
from typing import Any

from .. import procfs
from ..protocol import GpuInfo, GpuProcess, GpuSample
from .base import GpuFacts
from .health import CardEvidence

# tomllib is 3.11+; on older nodes the bootstrap ships tomli, its origin.
if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10 nodes
    import tomli as tomllib

_UNITS = {
    "": 1,
    "k": 1 / 1024,
    "kib": 1 / 1024,
    "m": 1,
    "mib": 1,
    "g": 1024,
    "gib": 1024,
    "t": 1024 * 1024,
    "tib": 1024 * 1024,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_mib(value: Any) -> int:
    """A size in binary units ("80GiB", "512M", 2048) as MiB; a bare number is MiB."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    m = _SIZE.match(str(value))
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"not a size: {value!r} (use e.g. 80GiB, 512MiB)")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def load_dir(toml_path: str | os.PathLike[str]) -> Path:
    """Where fakeload processes register themselves for the file at `toml_path`."""
    return Path(f"{os.fspath(toml_path)}.load")


def _alive(pid: int) -> bool:
    return procfs.start_ticks(pid) is not None and not procfs.is_zombie(pid)


def units(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The placement units the file describes: each [[gpu]], or each of its MIG
    instances (the card's fields, health included, with the instance's own memory,
    utilisation and processes)."""
    out: list[dict[str, Any]] = []
    for card_index, card in enumerate(doc.get("gpu", [])):
        slices = card.get("mig") or []
        if not slices:
            out.append(card)
            continue
        for k, piece in enumerate(slices):
            profile = str(piece.get("profile", f"mig{k}"))
            out.append({
                **card, "process": piece.get("process", []), "util": piece.get("util"),
                "memory": piece.get("memory", 0), "mig_profile": profile,
                "mig_parent": card_index, "uuid": f"MIG-fake-{len(out):04d}",
                "name": f"{card.get('name', 'Fake GPU')} MIG {profile}",
            })
    return out


class FakeBackend:
    name = "fake"

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self._read()  # fail at start-up, not at the first sample, on a bad file
        self._first = True

    def _read(self) -> dict[str, Any]:
        with open(self.path, "rb") as f:
            return tomllib.load(f)

    def facts(self) -> GpuFacts:
        doc = self._read()
        if self._first:
            self._first = False
            # A slow driver's first nvmlInit blocks the runner as long, hello included.
            time.sleep(float(doc.get("slow_init", 0)))
        gpus = [
            GpuInfo(
                index=i,
                name=str(g.get("name", "Fake GPU")),
                uuid=str(g.get("uuid", f"GPU-fake-{i:04d}")),
                total_mb=parse_mib(g.get("memory", 0)),
                mig=g.get("mig_profile"),
                parent=g.get("mig_parent"),
            )
            for i, g in enumerate(units(doc))
        ]
        cuda = doc.get("cuda")
        return GpuFacts(
            cuda=str(cuda) if cuda is not None else None,
            driver=str(doc.get("driver", "fake")),
            gpus=gpus,
        )

    def _loads(self) -> list[tuple[int, list[int], int]]:
        """Live fakeload registrations as (pid, card indices, MiB); dead ones removed."""
        out = []
        directory = load_dir(self.path)
        try:
            entries = list(directory.iterdir())
        except FileNotFoundError:
            return []
        for entry in entries:
            if entry.suffix != ".json" or entry.name.startswith("."):
                continue  # a registration still being written
            try:
                rec = json.loads(entry.read_text())
                pid = int(rec["pid"])
                cards = [int(c) for c in rec["gpus"]]
                mib = int(rec["mib"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if not _alive(pid):
                entry.unlink(missing_ok=True)
                continue
            out.append((pid, cards, mib))
        return out

    def health(self, index: int) -> CardEvidence:
        g = self._card(index)
        while g.get("nvml_hang"):
            time.sleep(0.2)  # hung, like the driver call it stands for
            g = self._card(index)
        xids = g.get("xid", [])
        return CardEvidence(
            xids=[int(x) for x in (xids if isinstance(xids, list) else [xids])],
            ecc_dbe=int(g.get("ecc_dbe", 0)),
            retired_pending=bool(g.get("retired_pending", False)),
            lost=bool(g.get("lost", False)),
        )

    def _card(self, index: int) -> dict[str, Any]:
        try:
            cards = units(self._read())
        except (OSError, tomllib.TOMLDecodeError):
            return {}  # mid-rewrite: read again next time
        # A card taken out of the file is simply gone (the samples no longer name it);
        # only `lost = true` is a card that vanished under the runner.
        return cards[index] if index < len(cards) else {}

    def sample(self, skip: Collection[int] = frozenset()) -> list[GpuSample]:
        doc = self._read()
        blind = bool(doc.get("blind", False))
        loads = self._loads()
        out = []
        for i, g in enumerate(units(doc)):
            procs: list[tuple[int, str, int]] = [
                (int(p["pid"]), str(p.get("user", "?")), parse_mib(p.get("used", 0)))
                for p in g.get("process", [])
            ]
            procs += [
                (pid, procfs.process_user(pid), mib) for pid, cards, mib in loads if i in cards
            ]
            util = g.get("util")
            out.append(
                GpuSample(
                    index=i,
                    total_mb=parse_mib(g.get("memory", 0)),
                    used_mb=sum(mib for _, _, mib in procs),
                    util_percent=int(util) if util is not None else None,
                    processes=[
                        GpuProcess(pid=pid, user=user, used_mb=None if blind else mib)
                        for pid, user, mib in procs
                    ],
                    blind=blind,
                )
            )
        return out

    def close(self) -> None:
        pass
