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
PILOT_LOG = "pilot.log"  # the batch script's output, in the pilot's home on the compute node


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
    """The batch script: log to the pilot's home on the compute node, set up, write the
    attach script, run the runner in the foreground (the allocation lasts as long as
    it does). `python`: the interpreter nvq installed the runner for (see
    `runner_install_node`); else `cluster.python`. `install`: lines that install that
    runner where the compute node lacks it."""
    py = python or cluster.python
    lines = [
        "#!/bin/bash -l",
        f"# nvq pilot for cluster {cluster.name}",
        "set -e",
        f'H={_path(cluster.home.rstrip("/"))}/"$SLURM_JOB_ID"',
        SAID_FUNCTION,
        'e=$(mkdir -p "$H" 2>&1) || { nvq_said "$e"; exit 1; }',
        # Slurm's own output is /dev/null (see `sbatch_command`): the script's goes
        # here, on the compute node, and the waiting attach step relays it to the
        # daemon, which names it when the pilot ends before its runner answers.
        f'exec >>"$H/{PILOT_LOG}" 2>&1',
        # A pilot that fails before squeue ever showed it running had no attach step
        # to relay its log: its last lines go in the job's Comment, which Slurm keeps
        # (`end_command`). `exec` of the runner below never runs this trap.
        f"trap 'nvq_said \"$(tail -n 3 \"$H/{PILOT_LOG}\")\"' EXIT",
        *cluster.setup,
        *(f"export {key}={shlex.quote(value)}" for key, value in cluster.env.items()),
        *install,
        # Under `set -e` a failed `command -v` would end the script without a word.
        f"PY=$(command -v {_path(py)}) || "
        f'{{ echo "nvq pilot: {py}: not found on $(hostname)"; exit 127; }}',
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


# `nvq_said TEXT`: TEXT on one line in the job's Comment (best effort: a site may
# refuse it), between marks that find it in scontrol's KEY=VALUE line.
SAID_START, SAID_END = "nvq-said: ", " :nvq-said"
SAID_FUNCTION = (
    "nvq_said() { scontrol update JobId=\"$SLURM_JOB_ID\" Comment=\""
    f"{SAID_START}$(printf '%s' \"$1\" | tr -s '\\n' ' ' | cut -c1-240){SAID_END}\" "
    ">/dev/null 2>&1 || true; }"
)


def sbatch_command(cluster: ClusterConfig) -> str:
    """`sbatch --parsable <options>`, which reads the pilot script (`pilot_script`) on
    stdin: the script carries the runner where compute nodes do not share the login
    node's home, too big for a command line. Slurm's own output goes to /dev/null, a
    path every compute node has: a path in `home` that a compute node lacks would end
    the pilot before its script ran (the script keeps its own log, `PILOT_LOG`)."""
    opts = " ".join(shlex.quote(o) for o in sbatch_options(cluster))
    return f"sbatch --parsable --output=/dev/null {opts}"


def squeue_command(cluster: ClusterConfig) -> str:
    return (
        f"squeue --me --noheader --name={shlex.quote(job_name(cluster))} "
        f"--format={shlex.quote(SQUEUE_FORMAT)}"
    )


def end_command(job_id: str) -> str:
    """What Slurm recorded of an ended job: sacct where the site keeps accounting,
    else scontrol, which remembers a job for `MinJobAge` (300 s by default)."""
    j = shlex.quote(job_id)
    return (
        f"sacct --noheader --parsable2 --allocations --jobs={j} "
        f"--format=State,ExitCode,Reason,Comment 2>/dev/null | grep . "
        f"|| scontrol show job --oneliner {j}"
    )


def log_command(home: str) -> str:
    """The batch log in a pilot's `home` (`pilot_home`) where the login node sees it
    (a `home` shared with the compute node); nothing, status 0, elsewhere."""
    return f"tail -n 20 {_path(home)}/{PILOT_LOG} 2>/dev/null || true"


def scancel_command(job_ids: list[str]) -> str:
    return "scancel " + " ".join(shlex.quote(j) for j in job_ids)


def attach_command(job_id: str, home: str) -> str:
    """A step inside the pilot's allocation that waits for its runner in `home` (its
    `pilot_home`), relaying the batch script's log on stderr meanwhile, then splices
    to it: one step per start, however long the site's setup takes (its `sleep` is on
    the compute node, not an `srun` each time)."""
    return (
        f"{_srun(job_id)} /bin/sh -c {shlex.quote(ATTACH_WAIT)} nvq-attach {_path(home)}"
    )


# $1: the pilot's home. Waits for the runner's socket (the batch script may not even
# have made the home yet), relaying the script's log to stderr meanwhile.
ATTACH_WAIT = (
    'h="$1"; t=""; n=0; '
    f'until test -S "$h/runner.sock" && test -x "$h/attach"; do '
    f'if test -z "$t" && test -f "$h/{PILOT_LOG}"; then '
    f'tail -n +1 -f "$h/{PILOT_LOG}" >&2 & t=$!; fi; '
    "n=$((n+1)); if test $n -lt 50; then sleep 0.1; else sleep 0.5; fi; done; "
    'test -z "$t" || kill "$t" 2>/dev/null; exec "$h/attach"'
)


def _srun(job_id: str) -> str:
    # `--overlap` shares the allocation's resources with the runner; `--unbuffered`
    # because frames are binary and srun would otherwise hold output until a newline.
    return (
        f"srun --jobid={shlex.quote(job_id)} --overlap --nodes=1 --ntasks=1 --unbuffered "
        "--quiet"
    )


def step_command(job_id: str, home: str, script: str) -> str:
    """Run the pilot's `script` (`run`) in a step of its allocation."""
    return f"{_srun(job_id)} {_path(home)}/{script}"


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
    """squeue's `%L` (`[D-][[HH:]MM:]SS`) → seconds; None for UNLIMITED and the like.
    `INVALID` is a job past its limit (Slurm is ending it, KillWait): no time left."""
    text = text.strip()
    if text == "INVALID":
        return 0.0
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


def parse_said(stdout: str) -> str | None:
    """What the batch script left in its job's Comment (`SAID_FUNCTION`), from
    `end_command`'s answer; None when it left nothing (or the site refused it)."""
    said = re.search(re.escape(SAID_START) + "(.*?)" + re.escape(SAID_END), stdout)
    return (said.group(1).strip() or None) if said else None


def parse_end(stdout: str) -> str | None:
    """`end_command`'s answer → `FAILED, exit code 1:0 (NonZeroExitCode)`; None when
    Slurm no longer knows the job."""
    text = stdout.strip()
    if not text:
        return None
    if "JobState=" in text:  # scontrol: KEY=VALUE words
        fields = dict(w.split("=", 1) for w in text.split() if "=" in w)
        state, code, reason = (
            fields.get("JobState", ""), fields.get("ExitCode", ""), fields.get("Reason", "")
        )
    else:  # sacct: State|ExitCode|Reason|Comment
        state, code, reason, *_ = [*text.splitlines()[0].split("|"), "", "", ""]
    out = state or "ended"
    if code and code != "0:0":
        out += f", exit code {code}"
    if _reason(reason):
        out += f" ({reason})"
    return out


def output_tail(text: str, lines: int = 3) -> str:
    """The last lines of a pilot's batch output that say something (srun's and
    slurmstepd's own notes about the step being ended left out), on one line."""
    said = [
        line.strip()
        for line in text.splitlines()
        if line.strip() and not line.lstrip().startswith(("srun:", "slurmstepd"))
    ]
    return " / ".join(said[-lines:])[:400]
