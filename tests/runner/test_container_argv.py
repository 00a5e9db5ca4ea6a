"""The container runtime's command line for an image job (a pure function), the cards'
flags and view, and which runtime a node uses."""

from __future__ import annotations

from nvq.daemon.placement.slots import node_runtime
from nvq_runner.container import card_env, card_flags, container_name, env_lines, run_argv

JOB = "/home/q/.nvq/node/jobs/abc-7-n1"


def argv(**kw: object) -> list[str]:
    args: dict[str, object] = dict(
        runtime="podman", image="reg.lab/train:3", name="nvq-abc-7-1", uid=1001, gid=100,
        job_dir=JOB, workdir=f"{JOB}/work/src", artifacts=f"{JOB}/artifacts",
        script=f"{JOB}/container.sh", env_file=f"{JOB}/container.env", gpus=[2, 3],
        memory_mb=4096, cdi=True,
    )
    args.update(kw)
    return run_argv(**args)  # type: ignore[arg-type]


def test_podman_with_cdi_runs_the_script_as_the_owner_with_mounts_cards_and_limit() -> None:
    assert argv() == [
        "podman", "run", "--rm", "--name", "nvq-abc-7-1", "--init", "--user", "1001:100",
        "--env-file", f"{JOB}/container.env", "--workdir", f"{JOB}/work/src",
        "--network", "host", "--volume", f"{JOB}:{JOB}",
        "--volume", f"{JOB}/artifacts:/artifacts", "--memory", "4096m",
        "--device=nvidia.com/gpu=2", "--device=nvidia.com/gpu=3",
        "reg.lab/train:3", "/bin/sh", f"{JOB}/container.sh",
    ]


def test_a_workdir_outside_the_job_directory_is_mounted_too_and_no_limit_when_none() -> None:
    out = argv(workdir="/data/proj", memory_mb=None, gpus=[])
    at = out.index("/data/proj:/data/proj")
    assert out[at - 1] == "--volume"
    assert "--memory" not in out and not [a for a in out if a.startswith("--device")]


def test_without_cdi_each_runtime_hands_cards_its_own_way() -> None:
    present = {"/dev/nvidia1", "/dev/nvidiactl", "/dev/nvidia-uvm"}
    assert card_flags("podman", [1], cdi=False, exists=present.__contains__) == [
        "--device=/dev/nvidia1", "--device=/dev/nvidiactl", "--device=/dev/nvidia-uvm"]
    # a fake card has no device node: nothing to hand over
    assert card_flags("podman", [5], cdi=False, exists=lambda p: False) == []
    assert card_flags("docker", [0, 2], cdi=False) == ["--gpus", "device=0,2"]
    assert card_flags("apptainer", [0], cdi=True) == ["--nv"]
    assert card_flags("podman", [], cdi=True) == []


def test_the_container_sees_its_cards_from_zero_and_the_hook_sees_the_hosts() -> None:
    assert card_env("podman", [2, 3]) == {
        "NVIDIA_VISIBLE_DEVICES": "2,3", "CUDA_VISIBLE_DEVICES": "0,1"}
    assert card_env("docker", []) == {"NVIDIA_VISIBLE_DEVICES": "void", "CUDA_VISIBLE_DEVICES": ""}
    assert card_env("apptainer", [2]) == {
        "NVIDIA_VISIBLE_DEVICES": "2", "CUDA_VISIBLE_DEVICES": "2"}


def test_apptainer_binds_the_same_paths() -> None:
    out = argv(runtime="apptainer", gpus=[0])
    assert out[:2] == ["apptainer", "exec"]
    assert f"{JOB}/artifacts:/artifacts" in out and "--nv" in out
    assert out[-3:] == ["reg.lab/train:3", "/bin/sh", f"{JOB}/container.sh"]


def test_names_and_env_file() -> None:
    assert container_name("36aa86d0f1b1b482", 7, 2) == "nvq-36aa86d0f1b1b482-7-2"
    assert container_name("", 7, 1) == "nvq-local-7-1"
    assert env_lines({"A": "1", "B": "x y", "BAD": "two\nlines"}) == "A=1\nB=x y\n"


def test_the_node_runtime_is_the_configured_one_only_where_it_is_installed() -> None:
    assert node_runtime(None, ["podman", "docker"]) == "podman"
    assert node_runtime("docker", ["podman", "docker"]) == "docker"
    assert node_runtime("apptainer", ["podman"]) == ""
    assert node_runtime(None, []) == ""


def test_a_shell_session_gets_a_terminal_and_without_a_command_the_images_own_shell() -> None:
    out = argv(tty=True, script="")
    assert out[out.index("--network") + 2:out.index("--network") + 4] == ["--interactive", "--tty"]
    assert out[-2:] == ["reg.lab/train:3", "/bin/sh"]
    assert "--tty" not in argv()
