"""Which evidence makes a card unhealthy (nvq_runner/gpu/health.py), and the fake
backend's injection of each kind."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from nvq_runner.gpu.fake import FakeBackend
from nvq_runner.gpu.health import CardEvidence, faults, xid_fatal
from nvq_runner.gpu.watch import HUNG, Watched, faults_during
from nvq_runner.node_sample import take_sample


def test_xids_are_judged_by_the_device_plugins_list() -> None:
    assert not any(xid_fatal(x) for x in (13, 31, 43, 45, 68, 109))
    assert all(xid_fatal(x) for x in (48, 63, 64, 74, 79, 92, 94, 95))
    assert faults(CardEvidence(xids=[13, 43])) == []
    assert faults(CardEvidence(xids=[13, 79, 79])) == ["xid 79"]


def test_each_kind_of_evidence_is_one_line() -> None:
    assert faults(CardEvidence()) == []
    got = faults(
        CardEvidence(xids=[48], ecc_dbe=2, retired_pending=True, nvml_hang=True, lost=True)
    )
    assert got == [
        "xid 48",
        "2 volatile double-bit ECC errors",
        "retired pages or remapped rows pending (the card needs a reset)",
        "NVML did not answer in time",
        "the card vanished",
    ]
    assert faults(CardEvidence(ecc_dbe=1)) == ["1 volatile double-bit ECC error"]


def test_the_fake_backend_injects_each_condition(tmp_path: Path) -> None:
    cards = "\n".join(
        f'[[gpu]]\nname = "Fake"\nmemory = "24GiB"\n{line}'
        for line in ("", "xid = 79", "ecc_dbe = 1", "nvml_hang = true",
                     "retired_pending = true", "lost = true", "xid = [13, 31]")
    )
    path = tmp_path / "gpus.toml"
    path.write_text('cuda = "13.0"\n' + cards + "\n")
    backend = FakeBackend(str(path))
    got = [faults(backend.health(i)) for i in (0, 1, 2, 4, 5, 6)]
    assert got == [
        [],
        ["xid 79"],
        ["1 volatile double-bit ECC error"],
        ["retired pages or remapped rows pending (the card needs a reset)"],
        ["the card vanished"],
        [],
    ]
    assert all(s.faults == [] for s in backend.sample())  # the health watch fills them


def _replace(path: Path, text: str) -> None:
    """Change the fake's cards at once: the watch reads the file while the test writes
    it, and a half-written file has one card (the other "vanished")."""
    new = path.with_suffix(".new")
    new.write_text(text)
    new.replace(path)


def test_a_hung_health_read_marks_its_card_and_blocks_nothing_else(tmp_path: Path) -> None:
    """`nvml_hang = true` makes the fake's health read of card 1 hang for real: the
    watch marks that card past its deadline, card 0 goes on being read, the sample
    skips the hung card, and an attempt on it that began before the hang is told."""
    path = tmp_path / "gpus.toml"
    two = '[[gpu]]\nmemory = "24GiB"\n{}\n[[gpu]]\nmemory = "24GiB"\n{}\n'
    path.write_text(two.format("", ""))
    began = time.time()
    backend = Watched(FakeBackend(str(path)), {"NVQ_SAMPLE_INTERVAL": "0.05",
                                               "NVQ_NVML_DEADLINE": "0.5"})
    assert len(backend.facts().gpus) == 2  # the watch starts with the cards known
    watch = backend.watch
    try:
        _replace(path, two.format("", "nvml_hang = true"))
        _until(lambda: watch.hung() == {1})
        _replace(path, two.format("xid = 79", "nvml_hang = true"))  # card 0 still read
        _until(lambda: watch.current()[0] == ["xid 79"])
        assert watch.current()[1] == [HUNG]
        sample = take_sample(backend, {}, {})
        assert [g.faults for g in sample.gpus] == [["xid 79"], [HUNG]]
        assert faults_during([1], began) == {1: [HUNG]}  # what an exit now carries
        assert faults_during([0, 1], time.time() + 60) == {}  # began before that attempt
    finally:
        _replace(path, two.format("", ""))  # the hung read returns
        backend.close()


def _until(pred: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_a_card_is_alerted_when_its_evidence_is_new() -> None:
    from nvq.domain.alerts import derive
    from nvq.domain.card_health import unhealthy_events
    from nvq_runner.protocol import GpuSample, Sample

    def sample(*faults: list[str]) -> Sample:
        gpus = [GpuSample(index=i, total_mb=1, used_mb=0, util_percent=None, processes=[],
                          faults=f) for i, f in enumerate(faults)]
        return Sample(time=0.0, gpus=gpus, mem_free_mb=0, progress={})

    first = sample([], ["xid 79"])
    events = unhealthy_events("gpu1", None, first)
    assert [(e.kind, e.data) for e in events] == [
        ("gpu_unhealthy", {"card": 1, "faults": ["xid 79"]})
    ]
    assert unhealthy_events("gpu1", first, sample([], ["xid 79"])) == []  # nothing new
    worse = unhealthy_events("gpu1", first, sample([], ["xid 79", "the card vanished"]))
    (alert,) = derive(worse, {})
    assert alert.key == "gpu_unhealthy:gpu1:1:xid 79; the card vanished"
    assert alert.message == (
        "card gpu1:1 is unhealthy (xid 79; the card vanished); it takes no new job"
    )


def test_the_fake_backend_is_slow_to_start_only_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`slow_init` (make test-late-nodes) delays the first read of the cards, the one
    the runner's hello waits for, and no later one."""
    path = tmp_path / "gpus.toml"
    path.write_text('slow_init = 4.5\n[[gpu]]\nname = "Fake"\nmemory = "24GiB"\n')
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    backend = FakeBackend(str(path))
    assert slept == []  # not at start-up: the runner is up, only its facts come late
    first = backend.facts()
    assert [g.total_mb for g in first.gpus] == [24 * 1024]
    assert backend.facts() == first
    assert slept == [4.5]
