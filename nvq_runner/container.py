"""Running a job attempt in a container image: which runtime a node has, and the
runtime's command line for one attempt (a pure function, `run_argv`).

The container is started by the job's wrapper (`exec <runtime> run …` as the job's
script), so everything the runner knows about bare jobs holds for it too: the wrapper
is the session leader the runner watches and adopts after a restart, the runtime's
client exits with the container's exit code and the wrapper records it, and the
output lands in the job's logs. What the wrapper cannot do, the runner adds by the
container's name (`nvq-<queue>-<job>-<attempt>`): stopping it with the job's grace and
killing it hard, since a signal to the client alone may leave the container running.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

RUNTIMES = ("podman", "docker", "apptainer")
# Where the job's previous-attempt files are, inside the container.
ARTIFACTS = "/artifacts"
# CDI specs (nvidia-ctk cdi generate) live in one of these.
CDI_DIRS = ("/etc/cdi", "/var/run/cdi")


def found_runtimes() -> list[str]:
    """The container runtimes installed on this node, in order of preference."""
    return [r for r in RUNTIMES if shutil.which(r)]


def has_cdi_gpus(dirs: Sequence[str] = CDI_DIRS) -> bool:
    """True when a CDI spec names NVIDIA's cards (`nvidia.com/gpu=N` devices)."""
    for d in dirs:
        for path in glob.glob(os.path.join(d, "*")):
            try:
                text = Path(path).read_text(errors="replace")
            except OSError:
                continue
            if "nvidia.com" in text and "gpu" in text:
                return True
    return False


def container_name(queue_id: str, job_id: int, attempt: int) -> str:
    queue = re.sub(r"[^A-Za-z0-9_.-]", "", queue_id)[:16] or "local"
    return f"nvq-{queue}-{job_id}-{attempt}"


def card_flags(
    runtime: str, gpus: Sequence[int], cdi: bool, exists: Callable[[str], bool] = os.path.exists,
) -> list[str]:
    """The runtime's flags that hand these cards (host indices) to the container."""
    if not gpus:
        return []
    if runtime == "apptainer":
        return ["--nv"]
    if cdi and runtime == "podman":
        return [f"--device=nvidia.com/gpu={g}" for g in gpus]
    if runtime == "docker":
        return ["--gpus", "device=" + ",".join(str(g) for g in gpus)]
    # podman without a CDI spec: the device nodes themselves, those that exist (a
    # fake card has none)
    nodes = [f"/dev/nvidia{g}" for g in gpus]
    nodes += ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"]
    return [f"--device={n}" for n in nodes if exists(n)]


def card_env(runtime: str, gpus: Sequence[int]) -> dict[str, str]:
    """The container's view of its cards: NVIDIA's hook reads NVIDIA_VISIBLE_DEVICES
    (host indices); CUDA inside sees only the handed cards, numbered from 0 (apptainer
    --nv shows every card, so there the host indices stand)."""
    if runtime == "apptainer":
        visible = ",".join(str(g) for g in gpus)
    else:
        visible = ",".join(str(i) for i in range(len(gpus)))
    return {
        "NVIDIA_VISIBLE_DEVICES": ",".join(str(g) for g in gpus) if gpus else "void",
        "CUDA_VISIBLE_DEVICES": visible,
    }


def run_argv(
    *,
    runtime: str,
    image: str,
    name: str,
    uid: int,
    gid: int,
    job_dir: str,
    workdir: str,
    artifacts: str,
    script: str,
    env_file: str,
    gpus: Sequence[int],
    memory_mb: int | None,
    cdi: bool,
    tty: bool = False,
) -> list[str]:
    """The command line that runs `script` (with /bin/sh) in `image` as uid:gid, in
    `workdir`, with the job's directory and working directory at their own paths,
    `artifacts` at /artifacts, the environment of `env_file`, the cards and the
    memory limit. `tty` (a `job shell`): on the terminal it is started from, and an
    empty `script` is the image's interactive /bin/sh."""
    inner = ["/bin/sh", script] if script else ["/bin/sh"]
    mounts = [job_dir] if workdir == job_dir or workdir.startswith(job_dir + "/") \
        else [job_dir, workdir]
    if runtime == "apptainer":
        argv = [runtime, "exec", "--containall", "--no-home", "--cleanenv",
                "--env-file", env_file, "--pwd", workdir]
        for m in mounts:
            argv += ["--bind", f"{m}:{m}"]
        argv += ["--bind", f"{artifacts}:{ARTIFACTS}", *card_flags(runtime, gpus, cdi)]
        return [*argv, image, *inner]
    argv = [runtime, "run", "--rm", "--name", name, "--init", "--user", f"{uid}:{gid}",
            "--env-file", env_file, "--workdir", workdir, "--network", "host"]
    if tty:
        argv += ["--interactive", "--tty"]
    for m in mounts:
        argv += ["--volume", f"{m}:{m}"]
    argv += ["--volume", f"{artifacts}:{ARTIFACTS}"]
    if memory_mb:
        argv += ["--memory", f"{memory_mb}m"]
    argv += card_flags(runtime, gpus, cdi)
    return [*argv, image, *inner]


def env_lines(env: dict[str, str]) -> str:
    """An --env-file's text; values with a newline cannot be written there and are
    left out (the job's own env never holds one from the CLI)."""
    return "".join(f"{k}={v}\n" for k, v in env.items() if "\n" not in v and "=" not in k)


def signal(runtime: str, name: str, sig: int) -> None:
    """Send `sig` to the container's processes by its name, beside the signal the
    runner sends the wrapper's group: the runtime's client alone may be killed and
    leave its container running. The runner's own timer sends SIGKILL after the
    grace, as for a bare job."""
    _background(runtime, ["kill", "--signal", str(int(sig)), name])


def remove(runtime: str, name: str) -> None:
    """Remove the container once its attempt ended: `--rm` is done by the runtime's
    client, which a SIGKILL may have ended first."""
    _background(runtime, ["rm", "--force", name])


def _background(runtime: str, args: list[str]) -> None:
    """Run the runtime off the runner's loop (a thread reaps it). Apptainer has no
    daemon or names: its processes are the wrapper's own, reached by the group signal."""
    if runtime not in ("podman", "docker") or shutil.which(runtime) is None:
        return
    # start_new_session: a runner restart must not take it along
    proc = subprocess.Popen([runtime, *args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    threading.Thread(target=proc.wait, daemon=True).start()
