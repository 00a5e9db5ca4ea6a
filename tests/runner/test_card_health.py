"""Which evidence makes a card unhealthy (nvq_runner/gpu/health.py), and the fake
backend's injection of each kind."""

from __future__ import annotations

from pathlib import Path

from nvq_runner.gpu.fake import FakeBackend
from nvq_runner.gpu.health import CardEvidence, faults, xid_fatal


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
    got = [s.faults for s in FakeBackend(str(path)).sample()]
    assert got == [
        [],
        ["xid 79"],
        ["1 volatile double-bit ECC error"],
        ["NVML did not answer in time"],
        ["retired pages or remapped rows pending (the card needs a reset)"],
        ["the card vanished"],
        [],
    ]


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
