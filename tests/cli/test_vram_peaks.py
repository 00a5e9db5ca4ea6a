"""Peak GPU memory, learned: every attempt records the most its own processes held on
each card (from the runner's samples, kept across a daemon restart and a runner that
adopts the job), a CUDA out-of-memory is a failure reason of its own, and
`--retries-on oom` runs it again with a larger reservation on a card that fits."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

import nvq as nvq_pkg
from nvq.client.errors import ClientError
from tests.cluster import Nvq

PY = sys.executable
LOAD = f"{PY} -m nvq_runner.fakeload"

# A small quiet card and a large one busy with someone's work: a 4 GiB job goes to the
# small one (a quiet card that fits comes first), where 6 GiB does not fit.
SMALL_AND_BUSY = """\
cuda = "13.0"

[[gpu]]
name = "Fake T4"
memory = "5GiB"

[[gpu]]
name = "Fake A100"
memory = "16GiB"
util = 50

[[gpu.process]]
pid = 4242
user = "alice"
used = "2GiB"
"""


def test_an_attempt_records_its_peak_per_card(nvq: Nvq) -> None:
    job = nvq.submit("--vram", "4GiB", "--", f"{LOAD} --mib 3000 --seconds 0 --until-sampled")
    code, (done,) = nvq.wait(job["id"])
    assert code == 0, done
    shown = nvq.show(job["id"])
    (attempt,) = shown["attempts"]
    card = done["gpus"][0]
    assert shown["peak_vram_mb"] == 3000
    assert attempt["peak_vram_mb"] == 3000 and attempt["peak_vram_by_card"] == {str(card): 3000}
    assert attempt["vram_mb"] == 4096 and attempt["vram_was_mb"] is None
    text = nvq.ok("job", "show", str(job["id"])).out
    assert "  gpu memory  peak 2.9 GiB of 4 GiB reserved\n" in text
    assert "         attempt 1: peak 2.9 GiB of 4 GiB reserved\n" in text


def test_the_peak_survives_a_daemon_restart_and_an_adopting_runner(
    nvq: Nvq, tmp_path: Path
) -> None:
    sampled, go = tmp_path / "sampled", tmp_path / "go"
    body = (f"{LOAD} --mib 2048 --seconds 0 --until-sampled; touch {sampled}; "
            f"while [ ! -e {go} ]; do sleep 0.05; done")
    job = nvq.submit("--vram", "3GiB", "--", "sh", "-c", body)["id"]
    nvq.wait_for(job, lambda j: j["state"] == "running" and sampled.exists())
    # while it runs, the peak so far (its runner's, in each sample)
    running = nvq.wait_for(job, lambda j: j["peak_vram_mb"] == 2048)
    assert running["attempts"][0]["outcome"] is None
    nvq.ok("daemon", "stop")
    nvq.ok("node", "restart", "local")  # starts a daemon; the new runner adopts the job
    # the adopting runner continues from the peak the attempt had reached
    nvq.wait_for(job, lambda j: j["peak_vram_mb"] == 2048)
    go.touch()
    code, (done,) = nvq.wait(job)
    assert code == 0, done
    shown = nvq.show(job)
    assert shown["peak_vram_mb"] == 2048
    assert shown["attempts"][0]["peak_vram_by_card"] == {str(done["gpus"][0]): 2048}


def test_a_cuda_oom_is_its_own_reason(nvq: Nvq) -> None:
    nvq.write_gpus(SMALL_AND_BUSY)
    job = nvq.submit("--vram", "4GiB", "--", f"{LOAD} --mib 6144 --seconds 0 --oom")
    code, (done,) = nvq.wait(job["id"])
    assert code == 1 and done["state"] == "failed" and done["gpus"] == [0]
    assert done["reason"] == "exited with code 1: out of GPU memory (peak 5 GiB of 4 GiB reserved)"
    assert "torch.OutOfMemoryError: CUDA out of memory" in done["stderr_tail"]
    (attempt,) = nvq.show(job["id"])["attempts"]
    assert attempt["outcome"] == "failed" and attempt["peak_vram_mb"] == 5120


def test_retries_on_oom_runs_it_again_with_a_larger_reservation(nvq: Nvq) -> None:
    nvq.write_gpus(SMALL_AND_BUSY)
    job = nvq.submit(
        "--vram", "4GiB", "--retries", "1", "--retries-on", "oom",
        "--", f"{LOAD} --mib 6144 --seconds 0 --oom --until-sampled",
    )  # fmt: skip
    code, (done,) = nvq.wait(job["id"])
    assert code == 0 and done["state"] == "completed", done
    assert done["attempt"] == 2 and done["gpus"] == [1]
    # max(peak 5 GiB, 4 GiB) × 1.5 = 7.5 GiB, rounded up to a whole GiB
    assert done["vram_mb"] == 8192
    shown = nvq.show(job["id"])
    first, second = shown["attempts"]
    assert first["outcome"] == "out of GPU memory (retried)" and first["gpus"] == [0]
    assert first["reason"] == (
        "exited with code 1: out of GPU memory (peak 5 GiB of 4 GiB reserved); "
        "next with --vram 8 GiB (was 4 GiB: oom)"
    )
    assert (first["vram_mb"], first["peak_vram_mb"]) == (4096, 5120)
    assert (second["vram_mb"], second["vram_was_mb"], second["peak_vram_mb"]) == (8192, 4096, 6144)
    text = nvq.ok("job", "show", str(job["id"])).out  # as the README shows it
    assert (
        "  out of GPU memory (retried) (exit 1): exited with code 1: out of GPU memory "
        "(peak 5 GiB of 4 GiB reserved); next with --vram 8 GiB (was 4 GiB: oom)\n"
        "         attempt 1: peak 5 GiB of 4 GiB reserved\n"
    ) in text
    assert re.search(
        r"  completed \(exit 0\)[^\n]*\n"
        r"         attempt 2: --vram 8 GiB \(was 4 GiB: oom\); peak 6 GiB of 8 GiB reserved\n",
        text,
    )


def test_a_submit_says_when_vram_is_below_what_the_command_reached(nvq: Nvq) -> None:
    cmd = f"{LOAD} --mib 5000 --seconds 0 --until-sampled"
    first = nvq.submit("--vram", "6GiB", "--", cmd)
    assert "vram_note" not in first  # nothing measured yet: nothing to say
    assert nvq.wait(first["id"])[0] == 0
    where = f"job {first['id']}, attempt 1"

    preview = _dry_run(nvq, "--vram", "4GiB", "--", cmd)
    note = (f"--vram 4 GiB is below the 4.9 GiB this command reached before ({where}); "
            "--vram auto would reserve 6 GiB")
    assert preview["vram_note"] == note
    text = nvq.ok("job", "submit", "--dry-run", "--vram", "4GiB", "--", cmd).out
    assert f"\n  {note}\n" in text
    enough = _dry_run(nvq, "--vram", "5GiB", "--", cmd)
    assert enough["vram_note"] is None

    plain = nvq.run("job", "submit", "--vram", "4GiB", "--", cmd)
    assert plain.code == 0 and plain.err == f"nvq: {note}\n"
    assert nvq.wait(int(plain.out.split()[2]))[0] == 0


def test_vram_auto_reserves_the_peak_with_a_margin_or_refuses_without_one(nvq: Nvq) -> None:
    cmd = f"{LOAD} --mib 5000 --seconds 0 --until-sampled"
    refused = nvq.run("job", "submit", "--vram", "auto", "--", cmd)
    assert refused.code == 1 and refused.out == ""
    assert refused.err == (
        "nvq: --vram auto: no earlier run of this command has a measured GPU memory peak "
        "(`job show ID --json`: peak_vram_mb); give --vram SIZE for its first run\n"
    )
    assert nvq.json("job", "ls")["jobs"] == []
    cpu = nvq.run("job", "submit", "--gpus", "0", "--vram", "auto", "--", cmd)
    assert cpu.code == 2 and cpu.err.count("\n") == 1 and "--gpus 0" in cpu.err

    first = nvq.submit("--vram", "6GiB", "--", cmd)
    assert nvq.wait(first["id"])[0] == 0
    auto = nvq.submit("--vram", "auto", "--", cmd)
    # 5000 MiB × 1.2 = 5.9 GiB, rounded up to 6 GiB
    assert auto["vram_mb"] == 6144
    assert auto["vram_note"] == (
        f"--vram auto: 6 GiB, from the 4.9 GiB this command reached "
        f"(job {first['id']}, attempt 1) × 1.2"
    )
    assert nvq.wait(auto["id"])[0] == 0

    waiting = nvq.submit("--vram", "6GiB", "--begin", "after 2h", "--", cmd)["id"]
    edit = nvq.run("job", "edit", str(waiting), "--vram", "auto")
    assert edit.code == 2 and edit.err == (
        "nvq: --vram auto is for job submit; job edit takes a size, e.g. 20GiB\n"
    )
    assert nvq.show(waiting)["vram_mb"] == 6144


def test_an_array_learns_from_its_earlier_members(nvq: Nvq) -> None:
    template = f"{LOAD} --mib 3000 --seconds 0 --until-sampled && echo member {{}}"
    nvq.submit("--vram", "4GiB", "--array", "0-1", "--", template)
    for member in nvq.json("job", "ls")["jobs"]:
        assert nvq.wait(member["id"])[0] == 0
    again = _dry_run(nvq, "--vram", "auto", "--array", "2-3", "--", template)
    assert again["job"]["vram_mb"] == 4096 and "2.9 GiB" in again["vram_note"]


def _dry_run(nvq: Nvq, *args: str) -> Any:
    return json.loads(nvq.ok("job", "submit", "--dry-run", "--json", *args).out)


def test_the_python_client_asks_for_auto_too(nvq: Nvq) -> None:
    cmd = f"{LOAD} --mib 2000 --seconds 0 --until-sampled"
    nvq.ok("queue", "status")  # the CLI starts the daemon with the test's environment
    with nvq_pkg.Client(nvq.home, autostart=False) as q:
        with pytest.raises(ClientError, match="no earlier run of this command") as refused:
            q.submit(cmd, vram="auto")
        assert refused.value.exit_code == 1
        first = q.submit(cmd, vram="3GiB")
        assert q.wait(first.id, timeout=60).exit_code == 0
        auto = q.submit(cmd, vram="auto")
        assert auto.vram_mb == 3072  # 2000 MiB × 1.2, up to a whole GiB
        assert q.wait(auto.id, timeout=60).exit_code == 0
