"""A CUDA out-of-memory told from other failures, the larger reservation an `oom`
retry takes, and what an attempt's peak and resize look like in its history."""

from __future__ import annotations

import msgspec
import pytest

from nvq.domain import attempts, gpu_oom, transitions
from nvq.domain.request import record_of
from nvq.model import Event, Job, JobRecord, JobSpec, JobState
from nvq_runner.protocol import ExitReason, JobExited


def running(**kw: object) -> JobRecord:
    base = Job(
        id=7, name="j", state=JobState.RUNNING, command="c", user="ann", submitter="ann",
        created_at=1.0, attempt=1, node="n0", gpus=[0], vram_mb=4096, retries=1,
    )  # fmt: skip
    return record_of(msgspec.structs.replace(base, **kw))


def failed(
    tail: str, peak: dict[int, int], *, code: int = 1, reason: ExitReason = "exit"
) -> JobExited:
    return JobExited(
        seq=1, job_id=7, attempt=1, exit_code=code, signal=None, ended_at=5.0, reason=reason,
        stderr_tail=tail, peak_vram_mb=peak,
    )  # fmt: skip


@pytest.mark.parametrize("tail", [
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
    "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to "
    "allocate 17179869184 bytes.",
    "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor",
])
def test_a_framework_oom_in_the_tail_is_out_of_gpu_memory(tail: str) -> None:
    assert gpu_oom.ran_out(running(), failed=True, tail=tail, peak_mb=0)


def test_a_bare_out_of_memory_needs_the_peak_at_the_reservation() -> None:
    job = running()
    assert gpu_oom.ran_out(job, failed=True, tail="error: out of memory", peak_mb=4096)
    # below its reservation: host memory, if anything
    assert not gpu_oom.ran_out(job, failed=True, tail="error: out of memory", peak_mb=1000)
    assert not gpu_oom.ran_out(job, failed=True, tail="segfault", peak_mb=9000)
    assert not gpu_oom.ran_out(job, failed=False, tail="CUDA out of memory", peak_mb=0)
    cpu = running(gpus_requested=0, vram_mb=0)
    assert not gpu_oom.ran_out(cpu, failed=True, tail="CUDA out of memory", peak_mb=0)


def test_the_larger_reservation_rule() -> None:
    assert gpu_oom.larger_vram(4096, 5120, 0) == 8192  # 7.5 GiB, up to a whole GiB
    assert gpu_oom.larger_vram(4096, 0, 0) == 6144
    assert gpu_oom.larger_vram(20480, 20000, 23552) == 23552  # capped at the largest card
    assert gpu_oom.larger_vram(30000, 0, 23552) == 30000  # never less than it was


def test_the_cap_is_what_the_largest_fitting_cards_hold() -> None:
    nodes = {
        "a1": [(0, 24576), (1, 24576)], "big": [(0, 81920)],
        "c1": [(0, 16384), (1, 16384), (2, 16384)],
    }  # fmt: skip

    def cap(**asked: object) -> int:
        return gpu_oom.vram_cap(nodes, JobSpec(command="c", **asked), 512)  # type: ignore[arg-type]

    assert cap(gpus=1) == 81920 - 512
    assert cap(gpus=2) == 24576 - 512
    assert cap(gpus=3) == 16384 - 512
    assert cap(gpus=4) == 0
    assert cap(gpus=1, node="a") == 24576 - 512  # only where it may go
    assert cap(gpus=1, lane="c1:2") == 16384 - 512


def test_an_oom_without_retries_on_fails_with_its_reason_and_peak() -> None:
    out = transitions.exited(running(), failed("CUDA out of memory", {0: 5120}), "n0")
    assert out.job is not None and out.job.state is JobState.FAILED
    assert out.job.reason == "exited with code 1: out of GPU memory (peak 5 GiB of 4 GiB reserved)"
    (event,) = out.events
    assert event.data["gpu_oom"] and event.data["peak_vram_mb"] == 5120


def test_retries_on_oom_raises_the_reservation_within_the_cap() -> None:
    job = running(retries_on="oom")
    out = transitions.exited(job, failed("CUDA out of memory", {0: 5120}), "n0", vram_cap_mb=7168)
    assert out.job is not None and out.job.state is JobState.PENDING
    assert out.job.spec.vram_mb == 7168 and out.job.retried == 1
    (event,) = out.events
    assert (event.kind, event.data["vram_mb"], event.data["vram_was_mb"]) == (
        "job_retried", 7168, 4096)


def test_a_timeout_or_a_kill_is_never_an_oom() -> None:
    job = running(retries_on="oom")
    timed = transitions.exited(job, failed("CUDA out of memory", {}, reason="timeout"), "n0")
    assert timed.job is not None and timed.job.state is JobState.TIMEOUT


def test_attempts_show_the_peak_and_the_resize() -> None:
    def ev(n: int, kind: str, data: dict[str, object]) -> Event:
        return Event(id=n, time=float(n), kind=kind, job_id=7, node="n0", data=data)

    first, second = attempts.derive([
        ev(1, "job_dispatched", {"attempt": 1, "gpus": [0], "vram_mb": 4096}),
        ev(2, "job_retried", {"attempt": 1, "gpu_oom": True, "reason": "r", "vram_mb": 8192,
                              "vram_was_mb": 4096, "peak_vram_mb": 5120,
                              "peak_vram_by_card": {"0": 5120}}),
        ev(3, "job_dispatched", {"attempt": 2, "gpus": [1], "vram_mb": 8192}),
        ev(4, "job_completed", {"attempt": 2, "exit_code": 0, "peak_vram_mb": 6144,
                                "peak_vram_by_card": {"1": 6144}}),
    ])  # fmt: skip
    assert first.outcome == "out of GPU memory (retried)"
    assert (first.vram_mb, first.vram_was_mb, first.peak_vram_by_card) == (4096, None, {0: 5120})
    assert (second.vram_mb, second.vram_was_mb, second.peak_vram_mb) == (8192, 4096, 6144)
