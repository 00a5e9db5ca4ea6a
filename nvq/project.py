"""`nvq project test`: run a manifest's job once, here, in the foreground, the way a
node would (bash, its env and workdir, the NVQ_* variables) and under its memory limit
(RLIMIT_AS), so a user learns before queueing that it fits."""

from __future__ import annotations

import os
import resource
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
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(
            ["bash", "-c", fields["command"]],
            cwd=fields.get("workdir") or None,
            env=env,
            stdout=out if capture else None,
            stderr=err if capture else None,
            stdin=subprocess.DEVNULL if capture else None,
            preexec_fn=_limit(memory) if limited else None,
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
