"""Slurm command lines and parsers, and the pilot script run by a real bash."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from nvq.clusters import slurm
from nvq.clusters.config import ClusterConfig
from nvq.clusters.slurm import PilotStatus

HPC = ClusterConfig(name="hpc", host="login")


def test_sbatch_options_follow_the_config() -> None:
    assert slurm.sbatch_options(HPC) == [
        "--job-name=nvq-hpc",
        "--nodes=1",
        "--ntasks=1",
        "--gres=gpu:1",
    ]
    full = ClusterConfig(
        name="hpc",
        host="login",
        partition="gpu",
        time=8 * 3600 + 0.5,
        gpus_per_pilot=4,
        cpus=32,
        memory_mb=65536,
        account="lab",
        qos="high",
        sbatch_args=["--exclusive"],
    )
    assert slurm.sbatch_options(full) == [
        "--job-name=nvq-hpc",
        "--nodes=1",
        "--ntasks=1",
        "--partition=gpu",
        "--time=08:00:01",
        "--gres=gpu:4",
        "--cpus-per-task=32",
        "--mem=65536M",
        "--account=lab",
        "--qos=high",
        "--exclusive",
    ]
    no_gpus = ClusterConfig(name="hpc", host="login", gpus_per_pilot=0)
    assert not any(o.startswith("--gres") for o in slurm.sbatch_options(no_gpus))


@pytest.mark.parametrize(
    ("gres", "flag", "option"),
    [
        ("gpu", "--gres", "--gres=gpu:2"),
        ("gpu:a100", "--gres", "--gres=gpu:a100:2"),
        ("gpu", "--gpus-per-node", "--gpus-per-node=2"),
        ("gpu:a100", "--gpus-per-node", "--gpus-per-node=a100:2"),
        ("gpu:h100", "--gpus", "--gpus=h100:2"),
    ],
)
def test_each_site_form_of_asking_for_cards(gres: str, flag: str, option: str) -> None:
    cluster = ClusterConfig(name="hpc", host="login", gpus_per_pilot=2, gres=gres, gpus_flag=flag)
    assert option in slurm.sbatch_options(cluster)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(60, "00:01:00"), (8 * 3600, "08:00:00"), (90061, "1-01:01:01"), (59.1, "00:01:00")],
)
def test_walltime_format(seconds: float, text: str) -> None:
    assert slurm.format_walltime(seconds) == text


def test_sbatch_reads_the_script_on_stdin_which_installs_the_runner_only_when_given() -> None:
    # Slurm's output goes where every compute node can write; the script keeps its
    # own log in the pilot's home on the compute node.
    assert slurm.sbatch_command(HPC) == (
        "sbatch --parsable --output=/dev/null --job-name=nvq-hpc --nodes=1 --ntasks=1 "
        "--gres=gpu:1"
    )
    assert 'exec >>"$H/pilot.log" 2>&1' in slurm.pilot_script(HPC)
    plain = slurm.pilot_script(HPC, "/r/venv/bin/python")
    with_install = slurm.pilot_script(HPC, "/r/venv/bin/python", ["R=/r", "echo install"])
    assert with_install.replace("R=/r\necho install\n", "") == plain
    assert with_install.index("echo install") < with_install.index("PY=$(command -v /r/venv")


def test_commands_for_listing_cancelling_and_attaching() -> None:
    assert slurm.squeue_command(HPC) == (
        "squeue --me --noheader --name=nvq-hpc --format='%i|%T|%L|%N|%r'"
    )
    assert slurm.scancel_command(["12", "13"]) == "scancel 12 13"
    # One step that waits for the runner on the compute node.
    assert slurm.attach_command("81234", slurm.pilot_home(HPC, "81234")) == (
        "srun --jobid=81234 --overlap --nodes=1 --ntasks=1 --unbuffered --quiet "
        f"/bin/sh -c {shlex.quote(slurm.ATTACH_WAIT)} nvq-attach ~/.nvq/pilots/81234"
    )
    spaced = ClusterConfig(name="hpc", host="login", home="/scratch/my nvq/")
    assert slurm.attach_command("7", slurm.pilot_home(spaced, "7")).endswith(" nvq-attach '/scratch/my nvq/7'")
    assert slurm.step_command("7", "/scratch/my nvq/7", "run").endswith(
        "--quiet '/scratch/my nvq/7'/run"
    )
    assert slurm.pilot_home(spaced, "7") == "/scratch/my nvq/7"


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_pilot_script_sets_up_and_leaves_an_attach_script() -> None:
    """Run the script with a stand-in python: setup and env reach the runner, and the
    attach script refuses until the runner's socket exists."""
    # Short: the runner's socket path must fit in sockaddr_un.
    with tempfile.TemporaryDirectory(prefix="nvqp", dir="/tmp") as tmp:
        run_pilot_script(Path(tmp))


def run_pilot_script(tmp_path: Path) -> None:
    fake_py = tmp_path / "bin" / "python-x"
    fake_py.parent.mkdir()
    fake_py.write_text('#!/bin/sh\necho "$@" "A=$A" "B=$B" > "$OUT"\n')
    fake_py.chmod(0o755)
    cluster = ClusterConfig(
        name="hpc",
        host="login",
        home=str(tmp_path / "my pilots"),
        python="python-x",
        env={"A": "x y"},
        setup=["export B=from-setup"],
    )
    out = tmp_path / "out"
    env = {
        **os.environ,
        "SLURM_JOB_ID": "42",
        "OUT": str(out),
        "PATH": f"{fake_py.parent}:{os.environ['PATH']}",
        "HOME": str(tmp_path),
    }
    subprocess.run(["bash", "-c", slurm.pilot_script(cluster)], env=env, check=True)
    home = tmp_path / "my pilots" / "42"
    assert out.read_text().split("A=")[0].strip() == f"-m nvq_runner serve --home {home}"
    assert out.read_text().strip().endswith("A=x y B=from-setup")

    attach = subprocess.run([str(home / "attach")], env=env, capture_output=True, text=True)
    assert attach.returncode == slurm.ATTACH_NOT_READY
    assert "runner not up yet" in attach.stderr
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(home / "runner.sock"))
        subprocess.run([str(home / "attach")], env=env, check=True)
    assert out.read_text().split("A=")[0].strip() == f"-m nvq_runner attach --home {home}"


# ------------------------------------------------------------------ parsing


def test_parse_sbatch() -> None:
    assert slurm.parse_sbatch("81234\n") == "81234"
    assert slurm.parse_sbatch("81234;cluster2\n") == "81234"
    assert slurm.parse_sbatch("notice: hello\n81234\n") == "81234"
    with pytest.raises(ValueError, match="sbatch printed no job id"):
        slurm.parse_sbatch("")
    with pytest.raises(ValueError, match="no job id"):
        slurm.parse_sbatch("Submitted batch job 5")


def test_sbatch_error_is_slurms_message_on_one_line() -> None:
    stderr = (
        "sbatch: error: invalid partition specified: nosuch\n"
        "sbatch: error: Batch job submission failed: Invalid partition name specified\n"
    )
    assert slurm.sbatch_error(stderr, 1) == (
        "Batch job submission failed: Invalid partition name specified "
        "(invalid partition specified: nosuch)"
    )
    one = "sbatch: error: Batch job submission failed: Invalid account or account/partition\n"
    assert slurm.sbatch_error(one, 1) == (
        "Batch job submission failed: Invalid account or account/partition"
    )
    assert slurm.sbatch_error("bash: sbatch: command not found\n", 127) == (
        "bash: sbatch: command not found"
    )
    assert slurm.sbatch_error("", 3) == "sbatch exited with 3"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("5:00", 300.0),
        ("59", 59.0),
        ("1:02:03", 3723.0),
        ("2-01:00:00", 176400.0),
        ("1-00:00", 86400.0),
        ("3-5", 3 * 86400 + 5 * 3600.0),
        ("UNLIMITED", None),
        ("NOT_SET", None),
        ("INVALID", 0.0),  # past its limit, being ended: not unlimited
        ("", None),
    ],
)
def test_parse_time_left(text: str, seconds: float | None) -> None:
    assert slurm.parse_time_left(text) == seconds


def test_parse_squeue() -> None:
    out = (
        "81234|PENDING|8:00:00||Priority\n"
        "81235|RUNNING|7:59:12|gpu-07|None\n"
        "81236|COMPLETING|0:00|gpu-08|None\n"
        "81237|PENDING|UNLIMITED||(ReqNodeNotAvail, UnavailableNodes:gpu|09)\n"
        "\n"
    )
    assert slurm.parse_squeue(out) == [
        PilotStatus("81234", "PENDING", "Priority", 28800.0, None),
        PilotStatus("81235", "RUNNING", None, 28752.0, "gpu-07"),
        PilotStatus("81236", "COMPLETING", None, 0.0, "gpu-08"),
        PilotStatus("81237", "PENDING", "(ReqNodeNotAvail, UnavailableNodes:gpu|09)", None, None),
    ]
    assert [p.phase for p in slurm.parse_squeue(out)] == [
        "requested",
        "running",
        "ending",
        "requested",
    ]
    assert slurm.parse_squeue("") == []
    with pytest.raises(ValueError, match="unexpected squeue line"):
        slurm.parse_squeue("81234 PENDING\n")


def test_parse_squeue_json_of_two_slurm_versions() -> None:
    old = {
        "jobs": [
            {
                "job_id": 5,
                "name": "nvq-hpc",
                "job_state": "RUNNING",
                "state_reason": "None",
                "time_limit": 60,
                "end_time": 1_000_600,
                "nodes": "n1",
            },
            {
                "job_id": 6,
                "name": "nvq-hpc",
                "job_state": "PENDING",
                "state_reason": "Resources",
                "time_limit": 60,
                "end_time": 0,
                "nodes": "",
            },
            {"job_id": 7, "name": "other", "job_state": "RUNNING", "time_limit": 5},
        ]
    }
    assert slurm.parse_squeue_json(json.dumps(old), "nvq-hpc", now=1_000_000) == [
        PilotStatus("5", "RUNNING", None, 600.0, "n1"),
        PilotStatus("6", "PENDING", "Resources", 3600.0, None),
    ]
    new = {
        "jobs": [
            {
                "job_id": 8,
                "name": "nvq-hpc",
                "job_state": ["RUNNING"],
                "state_reason": "None",
                "time_limit": {"set": True, "infinite": False, "number": 60},
                "end_time": {"set": True, "infinite": False, "number": 1_000_030},
                "nodes": "n2",
            },
            {
                "job_id": 9,
                "name": "nvq-hpc",
                "job_state": ["PENDING"],
                "state_reason": "Priority",
                "time_limit": {"set": False, "infinite": True, "number": 0},
                "end_time": {"set": False, "number": 0},
                "nodes": "",
            },
        ]
    }
    assert slurm.parse_squeue_json(json.dumps(new), "nvq-hpc", now=1_000_000) == [
        PilotStatus("8", "RUNNING", None, 30.0, "n2"),
        PilotStatus("9", "PENDING", "Priority", None, None),
    ]


def test_how_an_ended_pilot_ended_from_sacct_or_scontrol() -> None:
    assert slurm.parse_end("FAILED|3:0|NonZeroExitCode\n") == (
        "FAILED, exit code 3:0 (NonZeroExitCode)"
    )
    scontrol = (
        "JobId=4 JobName=nvq-hpc JobState=FAILED Reason=NonZeroExitCode Dependency=(null) "
        "ExitCode=3:0 RunTime=00:00:04"
    )
    assert slurm.parse_end(scontrol) == "FAILED, exit code 3:0 (NonZeroExitCode)"
    assert slurm.parse_end("JobId=5 JobState=CANCELLED Reason=None ExitCode=0:15") == (
        "CANCELLED, exit code 0:15"
    )
    assert slurm.parse_end("") is None
    assert "scontrol show job --oneliner 4" in slurm.end_command("4")
    # What the batch script left in its job's Comment, spaces and all.
    said = f"{slurm.SAID_START}nvq pilot: python3: not found on c1 {slurm.SAID_END}"
    assert slurm.parse_said(f"JobId=4 JobState=FAILED Comment={said} ExitCode=127:0") == (
        "nvq pilot: python3: not found on c1"
    )
    assert slurm.parse_said(f"FAILED|127:0|NonZeroExitCode|{said}") == (
        "nvq pilot: python3: not found on c1"
    )
    assert slurm.parse_said(scontrol) is None


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_a_script_that_fails_before_its_runner_leaves_its_words_in_the_jobs_comment(
    tmp_path: Path,
) -> None:
    # A stand-in scontrol records the update the script makes on its way out.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    scontrol = bin_dir / "scontrol"
    scontrol.write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$OUT"\n')
    scontrol.chmod(0o755)
    out = tmp_path / "out"
    cluster = ClusterConfig(
        name="hpc", host="login", home=str(tmp_path / "p"), python="/opt/nosuch/python3",
        setup=["echo setting up"],
    )
    env = {
        **os.environ,
        "SLURM_JOB_ID": "42",
        "OUT": str(out),
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
    }
    done = subprocess.run(["bash", "-c", slurm.pilot_script(cluster)], env=env)
    assert done.returncode == 127
    log = (tmp_path / "p" / "42" / slurm.PILOT_LOG).read_text()
    assert "nvq pilot: /opt/nosuch/python3: not found on" in log, log
    update, job, comment = out.read_text().splitlines()
    assert (update, job) == ("update", "JobId=42")
    assert slurm.parse_said(comment) == f"setting up {log.splitlines()[-1]}", comment


def test_output_tail_leaves_out_sruns_own_notes() -> None:
    text = "setting up\nmodule: cuda/99 not found\nsrun: error: vm: task 0: Terminated\n"
    assert slurm.output_tail(text) == "setting up / module: cuda/99 not found"
    assert slurm.output_tail("srun: error: Unable to create step\n") == ""
