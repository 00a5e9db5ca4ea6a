"""`nvq project test`: run a manifest's job once, here, in the foreground, the way a
node would (bash, its env and workdir, the NVQ_* variables) and under its memory limit
(RLIMIT_AS), so a user learns before queueing that it fits."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

TAIL_BYTES = 4000


def _limit(mib: int) -> Callable[[], None]:
    limit = mib * 1024 * 1024

    def apply() -> None:  # runs in the child between fork and exec
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


def _tail(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-TAIL_BYTES:].decode(errors="replace")


def in_image(
    fields: dict[str, Any], env: dict[str, str], job_dir: Path, memory: int | None,
) -> list[str]:
    """The runtime's command line that runs the job in its image as the queue's node
    would (nvq_runner/container.py): this user, the working directory and job
    directory at their paths, the artifacts at /artifacts, the memory limit."""
    from nvq_runner import container

    runtime = next((r for r in ("podman", "docker") if shutil.which(r)), None)
    if runtime is None:
        raise ValueError("--image: no podman or docker here to run the image with")
    script = job_dir / "container.sh"
    script.write_text(fields["command"] + "\n")
    inner = {**fields.get("env", {}), **{k: v for k, v in env.items() if k.startswith("NVQ_")},
             "NVQ_ARTIFACTS": container.ARTIFACTS, "NVQ_IMAGE": fields["image"],
             **container.card_env(runtime, [])}
    env_file = job_dir / "container.env"
    env_file.write_text(container.env_lines(inner))
    return container.run_argv(
        runtime=runtime, image=fields["image"], name=f"nvq-project-test-{os.getpid()}",
        uid=os.getuid(), gid=os.getgid(), job_dir=str(job_dir),
        workdir=fields.get("workdir") or os.getcwd(), artifacts=str(job_dir / "artifacts"),
        script=str(script), env_file=str(env_file), gpus=[], memory_mb=memory, cdi=False)


def run_test(fields: dict[str, Any], *, limits: bool, capture: bool) -> dict[str, Any]:
    """Run the job; its output goes to this terminal (or, with `capture`, to files whose
    tails are returned). Returns the result document."""
    memory = int(fields.get("memory_mb") or 0)
    timeout = fields.get("timeout")
    job_dir = Path(tempfile.mkdtemp(prefix="nvq-project-test-"))
    (job_dir / "artifacts").mkdir()
    env = {
        **os.environ,
        **fields.get("env", {}),
        "NVQ_JOB_ID": "0",
        "NVQ_JOB_NAME": fields.get("name") or "project-test",
        "NVQ_NODE": "local",
        "NVQ_JOB_DIR": str(job_dir),
        "NVQ_STATUS_FILE": str(job_dir / "status"),
        "NVQ_ARTIFACTS": str(job_dir / "artifacts"),
        "NVQ_ATTEMPT": "1",
    }
    out_path, err_path = job_dir / "stdout.log", job_dir / "stderr.log"
    limited = limits and memory > 0
    argv = ["bash", "-c", fields["command"]]
    if fields.get("image"):
        argv = in_image(fields, env, job_dir, memory if limited else None)
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(
            argv,
            cwd=fields.get("workdir") or None,
            env=env,
            stdout=out if capture else None,
            stderr=err if capture else None,
            stdin=subprocess.DEVNULL if capture else None,
            preexec_fn=_limit(memory) if limited and not fields.get("image") else None,
            start_new_session=False,  # Ctrl-C reaches it, as in a terminal
        )
        timed_out = False
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
            code = proc.wait()
        except KeyboardInterrupt:
            proc.send_signal(signal.SIGINT)
            code = proc.wait()
    exit_code = 128 - code if code < 0 else code
    hint = ""
    if timed_out:
        hint = f" (killed after its timeout of {timeout:g}s)"
    elif exit_code != 0 and limited:
        hint = (
            f" under its memory limit of {memory} MiB: if it ran out of memory, raise "
            "`memory` in the manifest (or try --skip-limits to compare)"
        )
    return {
        "exit_code": exit_code,
        "timed_out": timed_out,
        "memory_limit_mb": memory if limited else None,
        "job_dir": str(job_dir),
        "stdout_tail": _tail(out_path) if capture else None,
        "stderr_tail": _tail(err_path) if capture else None,
        "hint": hint,
    }
