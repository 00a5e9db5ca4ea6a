"""Jobs as text: the `job ls` table, `job show`, and one-line outcomes."""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Sequence

from nvq.cli.render.array_member import member_label
from nvq.cli.render.artifacts import artifact_lines
from nvq.cli.render.events import data_text, kind_text
from nvq.cli.render.table import ago, clip, safe, table
from nvq.cli.render.why import start_clock
from nvq.cli.render.world import world_lines
from nvq.domain import gpu_oom
from nvq.values import format_duration, format_mib

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the plain-wire path renders dicts (fields.py)
    from nvq.control import JobDetail, JobPage
    from nvq.domain.contention import Contention
    from nvq.model import Job


def runtime(job: Job, now: float | None = None) -> str:
    # A job back in the queue (reassigned, preempted) keeps its first start, but its
    # old attempt is not running: no clock ticks for it (`job show` lists attempts).
    if job.started_at is None or job.state in WAITING:
        return "-"
    end = job.ended_at or (now or time.time())
    return format_duration(max(0.0, end - job.started_at))


WAITING = frozenset({"pending", "held", "paused"})


def job_where(job: Job) -> str:
    # A waiting job's node is where an earlier attempt ran, not where it is.
    if not job.node or job.state in WAITING:
        return "-"
    return f"{job.node}:{','.join(map(str, job.gpus))}" if job.gpus else f"{job.node}:cpu"


def state_label(job: Job) -> str:
    """A job's state as the tables show it: a running terminal session says
    `interactive` (its cards are held by a person at a prompt, not by a batch run);
    one whose --setup runs on its node says `setup` (its cards are held meanwhile)."""
    if job.state == "running" and getattr(job, "phase", "") == "setup":
        return "setup"
    if job.state == "running" and getattr(job, "interactive", False):
        return "interactive"
    return str(job.state)


def detail_state(doc: JobDetail) -> str:
    """`job show`'s state: a running job whose node is out of reach says so, with
    the time left before the queue may run it elsewhere."""
    at = getattr(doc, "reassign_at", None)
    if doc.state != "running" or not isinstance(at, float | int):
        return state_label(doc)
    return unreachable_state(at, doc.no_reassign)


def unreachable_state(at: float, no_reassign: bool, now: float | None = None) -> str:
    """A running job out of reach until `at` (its node's reassign moment, as `job ls
    --json`'s `unreachable` map gives it): `unreachable, reassign in 40s`."""
    left = format_duration(max(0.0, at - (time.time() if now is None else now)))
    # --no-reassign: never run elsewhere, only called lost (running again if it returns)
    return f"unreachable, {'lost' if no_reassign else 'reassign'} in {left}"


def outcome(job: Job) -> str:
    """`job 12 failed: exit 3`, as `job wait` and `job submit --wait` end."""
    return f"job {job.id} {job.state}" + (f": {safe(job.reason)}" if job.reason else "")


def lines(jobs: list[Job], said: str) -> str:
    return "\n".join(f"job {j.id} {said}" for j in jobs) or "(no jobs)"


def waiting_reason(job: Job) -> tuple[str, str] | None:
    """(reason code, words) of a waiting job, when the daemon said why it waits."""
    detail = getattr(job, "reason_detail", None)
    if job.state not in WAITING or not isinstance(detail, str) or job.reason is None:
        return None
    return job.reason, detail


def jobs_table(jobs: Sequence[Job], unreachable: Collection[str] = ()) -> str:
    """`unreachable`: nodes whose link is down while their grace runs; their running
    jobs show `unreachable` rather than a frozen `running` (a view, not a state)."""
    reasons = {j.id: waiting_reason(j) for j in jobs}
    with_reasons = any(reasons.values())  # once: asked per row, a long list took minutes
    starts = {j.id: start_column(j) for j in jobs} if with_reasons else {}
    with_starts = any(starts.values())
    rows = []
    for j in jobs:
        why = reasons[j.id]
        row = [
            str(j.id),
            "unreachable" if j.state == "running" and j.node in unreachable else state_label(j),
            clip(j.name, 24),
            clip(j.user, 12),
            job_where(j),
            format_mib(j.vram_mb) if j.vram_mb else "-",
            runtime(j),
            clip(why[1] if why else (j.progress or j.reason), 40),
        ]
        if with_reasons:
            row.insert(7, why[0] if why else "")
        if with_starts:
            row.insert(8, starts[j.id] or "")
        rows.append(row)
    header = ["ID", "STATE", "NAME", "USER", "WHERE", "VRAM", "RUNTIME", "PROGRESS"]
    if with_reasons:
        header.insert(7, "REASON")
    if with_starts:
        header.insert(8, "START")
    return table(header, rows)


def start_column(job: Job) -> str:
    """A pending job's estimated start (`~14:20`, `now`), or "" when none is known."""
    start = getattr(job, "start_estimate", None)
    at = getattr(start, "at", None)
    if not isinstance(at, float | int):
        return ""
    now = time.time()
    return "now" if at <= now else "~" + start_clock(at, now)


def contention_text(c: Contention) -> str:
    """An attempt's contention record in one line: `quiet: nothing else on its cards`,
    or `shared: foreign util p50 0% p95 95%, foreign memory p50 1GiB p95 8GiB; with
    jobs 12, 14`."""
    of = f"({c.samples} card samples)"
    if c.quiet:
        return f"quiet: nothing else on its cards {of}"
    line = (f"shared: foreign util p50 {c.foreign_util_p50}% p95 {c.foreign_util_p95}%, "
            f"foreign memory p50 {format_mib(c.foreign_mem_p50_mb)} "
            f"p95 {format_mib(c.foreign_mem_p95_mb)} {of}")
    if c.shared_with:
        jobs = "job" if len(c.shared_with) == 1 else "jobs"
        line += f"; with queue {jobs} {', '.join(map(str, c.shared_with))}"
    return line


LEFT_OUT = "(older jobs not shown: --all for every job, --limit N or --since ID|DATE)"


def window_text(page: JobPage) -> str:
    """`job ls`: the table, and a closing line when the window left jobs out."""
    away = getattr(page, "unreachable", None) or {}
    return jobs_table(page.jobs, unreachable=away) + ("\n" + LEFT_OUT if page.more else "")


def job_detail(doc: JobDetail, *, env: bool = False) -> str:
    """`job show`: what a user looks for first (state, where, how it ended, its stderr
    tail, attempts, syncs, events), then how it was asked for; the environment as a
    count (`env`: every variable)."""
    why = waiting_reason(doc)
    member = member_label(doc)
    out = [
        f"job {doc.id}" + (f" ({member})" if member else "") + f"  {safe(doc.name)}  [{detail_state(doc)}]",
        *([f"  waits       {why[0]}: {safe(why[1])}"] if why else []),
        f"  where       {job_where(doc)}" + (f"  (attempt {doc.attempt})" if doc.attempt else "")
        + (f"  port {doc.port}" if getattr(doc, "port", None) and doc.state not in WAITING else ""),
        f"  command     {safe(doc.command)}",
        *([f"  image       {safe(doc.image)}"
           + (f"  (sha256:{doc.image_id[:12]})" if doc.image_id else "")] if doc.image else []),
        f"  runtime     {runtime(doc)}  (started {ago(doc.started_at)}, ended {ago(doc.ended_at)})",
    ]
    if doc.exit_code is not None:
        out.append(f"  exit code   {doc.exit_code}")
    if doc.reason and not why:
        out.append(f"  reason      {safe(doc.reason)}")
    if doc.progress:
        out.append(f"  progress    {safe(doc.progress)}")
    if doc.peak_vram_mb is not None:
        measured = [a for a in doc.attempts if a.peak_vram_mb is not None]
        reserved = measured[-1].vram_mb or 0 if measured else doc.vram_mb
        out.append(f"  gpu memory  {gpu_oom.peak_text(doc.peak_vram_mb, reserved)}")
    if doc.result is not None:
        out.append(f"  result      {json.dumps(doc.result)}")
    if doc.result_error:
        out.append(f"  result      not kept: {doc.result_error}")
    if doc.log_truncated:
        out.append("  output cut: over max_log_size (its first MiB and its end are kept)")
    if doc.stderr_tail and doc.state not in ("completed", "running"):
        out.append(f"  {doc.stderr_tail_stream or 'stderr'} tail:")
        out.extend("    " + safe(ln) for ln in doc.stderr_tail.splitlines())
    if doc.attempts:
        out.append("  attempts:")
        for a in doc.attempts:
            how = a.outcome or "running"
            if a.exit_code is not None:
                how += f" (exit {a.exit_code})"
            if a.reason:
                how += f": {safe(a.reason)}"
            if a.result is not None:
                how += f"; result {safe(json.dumps(a.result)[:80])}"
            gpus = ",".join(map(str, a.gpus)) or "-"
            out.append(
                f"    #{a.attempt:<3} {a.node or '-':<12} gpus {gpus:<6} "
                f"started {ago(a.started_at):>10}  ended {ago(a.ended_at):>10}  {how}"
            )
            memory = gpu_oom.attempt_words(a.vram_mb, a.vram_was_mb, a.peak_vram_mb)
            if memory:
                out.append(f"         attempt {a.attempt}: {memory}")
            shared = getattr(a, "contention", None)
            if shared is not None:
                out.append(f"         {contention_text(shared)}")
    out.extend(artifact_lines(doc))
    if doc.events:
        out.append("  events:")
        for ev in doc.events:
            data = data_text(ev.data)
            node = f" @{ev.node}" if ev.node else ""
            out.append(f"    #{ev.id:<6} {ago(ev.time):>10}  {kind_text(ev.kind)}{node}  {safe(data)}")
    out += [
        f"  submitter   {safe(doc.submitter)} (user {doc.user})",
        f"  request     gpus={doc.gpus_requested} vram={format_mib(doc.vram_mb)}"
        + (f" node={safe(doc.node_request)}" if doc.node_request else "")
        + (f" timeout={format_duration(doc.timeout)}" if doc.timeout else "")
        + f" priority={doc.priority}",
        f"  created     {ago(doc.created_at)}",
    ]
    if doc.note:
        # A note keeps its lines (indented under the label); nothing else raw.
        note_lines = [safe(line) for line in doc.note.split("\n")]
        out.append("  note        " + "\n              ".join(note_lines))
    if doc.tags:
        out.append(f"  tags        {safe(', '.join(doc.tags))}")
    out.extend(world_lines(doc, env=env))
    if isinstance(doc.logs, str) and doc.logs:
        out.append("  logs:")
        out.extend("    " + safe(ln) for ln in doc.logs.splitlines())
    return "\n".join(out)

