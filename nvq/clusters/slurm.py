"""What nvq says to Slurm on a login node and how it reads the answers. Pure: every
function builds a shell command line or parses a command's output.

Pilots of cluster `hpc` are batch jobs named `nvq-hpc`; that name is how `squeue`
finds them again after a daemon restart. Each pilot's runner lives in
`<home>/<job id>` on the cluster, where the pilot script also leaves `attach`: a
script that splices to the runner once it listens (see `pilot_script`).
"""

from __future__ import annotations

import json
import math
import re
import shlex
import time
from collections.abc import Sequence
from typing import Any

import msgspec

from nvq.clusters.config import ClusterConfig

# Slurm states in which the allocation may still start or is running.
WAITING_STATES = frozenset(
    {
        "PENDING",
        "CONFIGURING",
        "REQUEUED",
        "RESV_DEL_HOLD",
        "REQUEUE_FED",
        "REQUEUE_HOLD",
        "SUSPENDED",
        "RESIZING",
    }
)
RUNNING_STATES = frozenset({"RUNNING"})
# `squeue -o`: the reason goes last, the one field that could hold our separator.
SQUEUE_FORMAT = "%i|%T|%L|%N|%r"
ATTACH_NOT_READY = 75  # the attach script's exit status while the runner is not up yet


class PilotStatus(msgspec.Struct, frozen=True):
    """One pilot as squeue reports it."""

    job_id: str
    state: str  # Slurm's own: PENDING, RUNNING, COMPLETING, ...
    reason: str | None  # why it waits ("Priority", "Resources"); None when there is none
    time_left: float | None  # seconds; None when unlimited or unknown
    host: str | None  # the compute node, once it runs

    @property
    def phase(self) -> str:
        """ "requested" (may still start), "running", or "ending" (will not run jobs)."""
        if self.state in RUNNING_STATES:
            return "running"
        if self.state in WAITING_STATES:
            return "requested"
        return "ending"


def job_name(cluster: ClusterConfig) -> str:
    return f"nvq-{cluster.name}"


def _path(path: str) -> str:
    """Quote a path for the shell but leave a leading `~` to expand there."""
    head, sep, rest = path.partition("/")
    if re.fullmatch(r"~[A-Za-z0-9._-]*", head):
        return head + sep + (shlex.quote(rest) if rest else "")
    return shlex.quote(path)


shell_path = _path


def _home_word(path: str) -> str:
    """Like `_path`, for a word where `~` would not expand (after `--opt=`)."""
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:])
    return shlex.quote(path)


def pilot_home(cluster: ClusterConfig, job_id: str) -> str:
    return f"{cluster.home.rstrip('/')}/{job_id}"


def format_walltime(seconds: float) -> str:
    """Seconds → Slurm's `[D-]HH:MM:SS` (rounded up: a pilot never gets less)."""
    whole = max(0, math.ceil(seconds))
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    clock = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}-{clock}" if days else clock


def gpus_option(cluster: ClusterConfig) -> str:
    """How a pilot asks for its cards, in the form the site takes: `--gres=gpu:2`,
    `--gres=gpu:a100:2`, `--gpus-per-node=a100:2`, `--gpus=2`."""
    _, _, model = cluster.gres.partition(":")
    if cluster.gpus_flag == "--gres":
        return f"--gres={cluster.gres}:{cluster.gpus_per_pilot}"
    return f"{cluster.gpus_flag}={model + ':' if model else ''}{cluster.gpus_per_pilot}"


def sbatch_options(cluster: ClusterConfig) -> list[str]:
    """The sbatch options of one pilot: one node, one task, the configured shape."""
    opts = [
        f"--job-name={job_name(cluster)}",
        "--nodes=1",
        "--ntasks=1",
    ]
    if cluster.partition:
        opts.append(f"--partition={cluster.partition}")
    if cluster.time is not None:
        opts.append(f"--time={format_walltime(cluster.time)}")
    if cluster.gpus_per_pilot:
        opts.append(gpus_option(cluster))
    if cluster.cpus:
        opts.append(f"--cpus-per-task={cluster.cpus}")
    if cluster.memory_mb:
        opts.append(f"--mem={cluster.memory_mb}M")
    if cluster.account:
        opts.append(f"--account={cluster.account}")
    if cluster.qos:
        opts.append(f"--qos={cluster.qos}")
    return opts + list(cluster.sbatch_args)


def pilot_script(
    cluster: ClusterConfig, python: str | None = None, install: Sequence[str] = ()
) -> str:
    """The batch script: set up, write the attach script, run the runner in the
    foreground (the allocation lasts as long as it does). `python`: the interpreter
    nvq installed the runner for (see `runner_install_node`); else `cluster.python`.
    `install`: lines that install that runner where the compute node lacks it."""
    lines = [
        "#!/bin/bash -l",
        f"# nvq pilot for cluster {cluster.name}",
        "set -e",
        f'H={_path(cluster.home.rstrip("/"))}/"$SLURM_JOB_ID"',
        'mkdir -p "$H"',
        *cluster.setup,
        *(f"export {key}={shlex.quote(value)}" for key, value in cluster.env.items()),
        *install,
        f"PY=$(command -v {_path(python or cluster.python)})",
        # The socket appears only once `serve` holds the home's lock; an attach before
        # that would start a second runner that takes the lock and ends the pilot.
        "printf '#!/bin/bash\\ntest -S %q/runner.sock || { echo \"nvq pilot: runner not up"
        f" yet\" >&2; exit {ATTACH_NOT_READY}; }}\\nexec %q -m nvq_runner attach --home %q\\n'"
        ' "$H" "$PY" "$H" > "$H/attach"',
        # `run ARGS`: the runner's other commands (pty-exec, port-connect) in a step of
        # the allocation, for job shell, exec and forward.
        "printf '#!/bin/bash\\nexec %q -m nvq_runner \"$@\"\\n' \"$PY\" > \"$H/run\"",
        'chmod +x "$H/attach" "$H/run"',
        'exec "$PY" -m nvq_runner serve --home "$H"',
    ]
    return "\n".join(lines) + "\n"


def sbatch_command(cluster: ClusterConfig) -> str:
    """`sbatch --parsable <options>`, which reads the pilot script (`pilot_script`) on
    stdin: the script carries the runner where compute nodes do not share the login
    node's home, too big for a command line."""
    home = cluster.home.rstrip("/")
    opts = " ".join(shlex.quote(o) for o in sbatch_options(cluster))
    # Slurm's own output goes next to the runners' homes, not into the login cwd;
    # sbatch does not expand `~`, so the login shell does it here.
    output = f"--output={_home_word(home + '/slurm-%j.out')}"
    return f"mkdir -p {_path(home)} && sbatch --parsable {output} {opts}"


def squeue_command(cluster: ClusterConfig) -> str:
    return (
        f"squeue --me --noheader --name={shlex.quote(job_name(cluster))} "
        f"--format={shlex.quote(SQUEUE_FORMAT)}"
    )


def scancel_command(job_ids: list[str]) -> str:
    return "scancel " + " ".join(shlex.quote(j) for j in job_ids)


def attach_command(cluster: ClusterConfig, job_id: str) -> str:
    """A step inside the pilot's allocation that splices to its runner."""
    return step_command(job_id, pilot_home(cluster, job_id), "attach")


def step_command(job_id: str, home: str, script: str) -> str:
    """Run the pilot's `script` (attach, run) in a step of its allocation. `--overlap`
    shares the allocation's resources with the runner; `--unbuffered` because frames
    are binary and srun would otherwise hold output until a newline."""
    return (
        f"srun --jobid={shlex.quote(job_id)} --overlap --nodes=1 --ntasks=1 --unbuffered "
        f"--quiet {_path(home)}/{script}"
    )


# ------------------------------------------------------------------ parsing


def parse_sbatch(stdout: str) -> str:
    """`sbatch --parsable` prints `<job id>` or `<job id>;<cluster>`."""
    text = stdout.strip().splitlines()[-1] if stdout.strip() else ""
    job_id = text.split(";", 1)[0].strip()
    if not job_id.isdigit():
        raise ValueError(f"sbatch printed no job id: {stdout.strip()[:200]!r}")
    return job_id


def sbatch_error(stderr: str, code: int) -> str:
    """Slurm's own reason for a refused submission, on one line."""
    messages = [
        line.split("error:", 1)[1].strip() for line in stderr.splitlines() if "error:" in line
    ]
    if messages:
        # "Batch job submission failed: X" says it all; earlier lines add detail.
        return messages[-1] if len(messages) == 1 else f"{messages[-1]} ({messages[0]})"
    last = stderr.strip().splitlines()[-1:] or [f"sbatch exited with {code}"]
    return last[0].strip()


def parse_time_left(text: str) -> float | None:
    """squeue's `%L` (`[D-][[HH:]MM:]SS`) → seconds; None for UNLIMITED and the like."""
    text = text.strip()
    match = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", text)
    if not match:
        return None
    days = int(match.group(1) or 0)
    parts = [int(p) for p in match.group(2, 3, 4) if p is not None]
    if match.group(1) is not None and len(parts) == 1:
        parts = [parts[0], 0, 0]  # "2-5" is two days and five hours
    while len(parts) < 3:
        parts.insert(0, 0)
    hours, minutes, secs = parts
    return float(days * 86400 + hours * 3600 + minutes * 60 + secs)


def _reason(text: str) -> str | None:
    text = text.strip()
    return None if text in ("", "None", "(null)") else text


def parse_squeue(stdout: str) -> list[PilotStatus]:
    """Lines of `squeue --noheader --format=SQUEUE_FORMAT`."""
    out: list[PilotStatus] = []
    for line in stdout.splitlines():
        if not line.strip():
            continue
        fields = line.split("|", 4)
        if len(fields) != 5 or not fields[0].strip():
            raise ValueError(f"unexpected squeue line: {line[:200]!r}")
        job_id, state, left, host, reason = (f.strip() for f in fields)
        out.append(
            PilotStatus(
                job_id=job_id,
                state=state,
                reason=_reason(reason),
                time_left=parse_time_left(left),
                host=host or None,
            )
        )
    return out


def _number(value: Any) -> float | None:
    """A number in squeue's JSON: plain (Slurm 22) or {"set", "infinite", "number"}."""
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite"):
            return None
        value = value.get("number")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def parse_squeue_json(text: str, name: str, now: float | None = None) -> list[PilotStatus]:
    """`squeue --json`, keeping the jobs called `name`. Its document holds recently
    ended jobs too and ignores some filters, so the name is checked here."""
    now = time.time() if now is None else now
    out: list[PilotStatus] = []
    for job in json.loads(text).get("jobs", []):
        if job.get("name") != name:
            continue
        state = job.get("job_state")
        if isinstance(state, list):  # Slurm 23+: a list of flags, the base state first
            state = state[0] if state else ""
        state = str(state or "")
        limit = _number(job.get("time_limit"))  # minutes
        end = _number(job.get("end_time"))
        if state in RUNNING_STATES and end:
            left: float | None = max(0.0, end - now)
        else:
            left = None if limit is None else limit * 60
        out.append(
            PilotStatus(
                job_id=str(job.get("job_id")),
                state=state,
                reason=_reason(str(job.get("state_reason") or "")),
                time_left=left,
                host=str(job.get("nodes") or "") or None,
            )
        )
    return out
