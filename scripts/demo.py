"""`make demo`: a daemon on this machine with two fake GPUs in a throw-away NVQ_HOME,
a handful of jobs that show placement, a dependency and a failure, then the queue's
status. Everything goes through the real `nvq` command, as a user would type it."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

GPUS = """\
cuda = "13.0"

[[gpu]]
name = "Fake A100 (demo)"
memory = "24GiB"

[[gpu]]
name = "Fake A100 (demo)"
memory = "24GiB"
util = 12

[[gpu.process]]
pid = 4242
user = "someone-else"
used = "6GiB"
"""

NVQ = [sys.executable, "-m", "nvq"]


def nvq(*args: str, check: bool = True) -> str:
    print(f"\n$ nvq {shlex.join(args)}", flush=True)
    proc = subprocess.run([*NVQ, *args], text=True, capture_output=True)
    out = proc.stdout.rstrip()
    if out:
        print(out)
    if proc.stderr.strip():
        print(proc.stderr.rstrip(), file=sys.stderr)
    if check and proc.returncode != 0:
        raise SystemExit(f"demo: `nvq {' '.join(args)}` exited {proc.returncode}")
    return out


def job_id(out: str) -> str:
    # "submitted job 3 (name)"
    return out.split()[2]


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="nvq-demo-"))
    (root / "gpus.toml").write_text(GPUS)
    os.environ["NVQ_HOME"] = str(root / "home")
    os.environ["NVQ_FAKE_GPUS"] = str(root / "gpus.toml")
    os.environ["NVQ_SUBMITTER"] = "demo"
    py = shlex.quote(sys.executable)
    print(
        f"NVQ_HOME={os.environ['NVQ_HOME']} (two fake 24 GiB GPUs; GPU 1 has 6 GiB of "
        "someone else's work on it)"
    )
    try:
        # Placement: two 16 GiB jobs fit one per card; the third waits for room.
        a = job_id(
            nvq(
                "job",
                "submit",
                "--name",
                "train-a",
                "--vram",
                "16GiB",
                "--note",
                "placement: one per card",
                "--",
                f"{py} -m nvq_runner.fakeload --mib 15000 --seconds 2",
            )
        )
        b = job_id(
            nvq(
                "job",
                "submit",
                "--name",
                "train-b",
                "--vram",
                "16GiB",
                "--",
                f"{py} -m nvq_runner.fakeload --mib 15000 --seconds 2",
            )
        )
        c = job_id(
            nvq(
                "job",
                "submit",
                "--name",
                "train-c",
                "--vram",
                "16GiB",
                "--",
                f"{py} -m nvq_runner.fakeload --mib 15000 --seconds 1",
            )
        )
        # A dependency: evaluate runs only after train-a completed, and reports a result.
        d = job_id(
            nvq(
                "job",
                "submit",
                "--name",
                "evaluate",
                "--gpus",
                "0",
                "--after",
                a,
                "--",
                "echo 'scoring'; echo 'eval 1/1' > $NVQ_STATUS_FILE; "
                "echo '{\"accuracy\": 0.91}' > $NVQ_JOB_DIR/result.json",
            )
        )
        # A failure, with its stderr kept on the record.
        e = job_id(
            nvq(
                "job",
                "submit",
                "--name",
                "broken",
                "--gpus",
                "0",
                "--",
                "echo 'Traceback: ValueError: bad learning rate' >&2; exit 2",
            )
        )
        nvq("job", "ls")
        nvq("job", "wait", a, b, c, d, e, "--timeout", "60", check=False)
        nvq("job", "show", d)
        nvq("job", "result", d)
        nvq("job", "show", e)
        nvq("queue", "status")
    finally:
        subprocess.run([*NVQ, "daemon", "stop"], capture_output=True)
        subprocess.run(
            [sys.executable, "-m", "nvq_runner", "stop", "--home", str(root / "home" / "node")],
            capture_output=True,
        )
        shutil.rmtree(root, ignore_errors=True)
    print("\ndemo done: the daemon is stopped and its NVQ_HOME removed")


if __name__ == "__main__":
    main()
