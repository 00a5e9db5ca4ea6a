"""Human-readable tables for the CLI. `--json` output never passes through here."""

from __future__ import annotations

import json
import time
from typing import Any

from nvq.units import format_duration, format_mib


def ago(t: float | None, now: float | None = None) -> str:
    if t is None:
        return "-"
    return format_duration(max(0.0, (now or time.time()) - t)) + " ago"


def runtime(job: dict[str, Any], now: float | None = None) -> str:
    start = job.get("started_at")
    if start is None:
        return "-"
    end = job.get("ended_at") or (now or time.time())
    return format_duration(max(0.0, end - start))


def table(headers: list[str], rows: list[list[str]]) -> str:
    if not rows:
        return "  ".join(headers)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    for r in rows:
        lines.append("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())
    return "\n".join(lines)


def _clip(text: str | None, n: int) -> str:
    if not text:
        return ""
    text = text.replace("\n", " ")
    return text if len(text) <= n else text[: n - 1] + "…"


def job_where(job: dict[str, Any]) -> str:
    if not job.get("node"):
        return "-"
    gpus = job.get("gpus") or []
    return f"{job['node']}:{','.join(map(str, gpus))}" if gpus else f"{job['node']}:cpu"


def jobs_table(jobs: list[dict[str, Any]]) -> str:
    rows = [
        [
            str(j["id"]),
            j["state"],
            _clip(j["name"], 24),
            job_where(j),
            format_mib(j["vram_mb"]) if j["vram_mb"] else "-",
            runtime(j),
            _clip(j.get("progress") or j.get("reason"), 40),
        ]
        for j in jobs
    ]
    return table(["ID", "STATE", "NAME", "WHERE", "VRAM", "RUNTIME", "PROGRESS"], rows)


def job_detail(doc: dict[str, Any]) -> str:
    lines = [
        f"job {doc['id']}  {doc['name']}  [{doc['state']}]",
        f"  command     {doc['command']}",
        f"  submitter   {doc['submitter']} (user {doc['user']})",
        f"  request     gpus={doc['gpus_requested']} vram={format_mib(doc['vram_mb'])}"
        + (f" node={doc['node_request']}" if doc.get("node_request") else "")
        + (f" timeout={format_duration(doc['timeout'])}" if doc.get("timeout") else "")
        + f" priority={doc['priority']}",
        f"  where       {job_where(doc)}"
        + (f"  (attempt {doc['attempt']})" if doc["attempt"] else ""),
        f"  created     {ago(doc['created_at'])}",
        f"  started     {ago(doc.get('started_at'))}",
        f"  ended       {ago(doc.get('ended_at'))}",
        f"  runtime     {runtime(doc)}",
    ]
    if doc.get("exit_code") is not None:
        lines.append(f"  exit code   {doc['exit_code']}")
    if doc.get("reason"):
        lines.append(f"  reason      {doc['reason']}")
    if doc.get("progress"):
        lines.append(f"  progress    {doc['progress']}")
    if doc.get("note"):
        lines.append("  note        " + doc["note"].replace("\n", "\n              "))
    if doc.get("tags"):
        lines.append(f"  tags        {', '.join(doc['tags'])}")
    if doc.get("result") is not None:
        lines.append(f"  result      {json.dumps(doc['result'])}")
    if doc.get("stderr_tail") and doc["state"] not in ("completed", "running"):
        lines.append("  stderr tail:")
        lines.extend("    " + ln for ln in doc["stderr_tail"].splitlines())
    attempts = doc.get("attempts") or []
    if attempts:
        lines.append("  attempts:")
        for a in attempts:
            how = a["outcome"] or "running"
            if a.get("exit_code") is not None:
                how += f" (exit {a['exit_code']})"
            if a.get("reason"):
                how += f": {a['reason']}"
            gpus = ",".join(map(str, a["gpus"])) or "-"
            lines.append(
                f"    #{a['attempt']:<3} {a['node'] or '-':<12} gpus {gpus:<6} "
                f"started {ago(a.get('started_at')):>10}  ended {ago(a.get('ended_at')):>10}  {how}"
            )
    events = doc.get("events") or []
    if events:
        lines.append("  events:")
        for ev in events:
            data = ", ".join(f"{k}={v}" for k, v in (ev.get("data") or {}).items())
            node = f" @{ev['node']}" if ev.get("node") else ""
            lines.append(f"    #{ev['id']:<6} {ago(ev['time']):>10}  {ev['kind']}{node}  {data}")
    if doc.get("logs"):
        lines.append("  logs:")
        lines.extend("    " + ln for ln in doc["logs"].splitlines())
    return "\n".join(lines)


def nodes_table(nodes: list[dict[str, Any]], procs: bool = False) -> str:
    rows = []
    proc_rows = []
    for n in nodes:
        if not n["gpus"]:
            rows.append([n["name"], n["state"], "-", "(no GPUs)", "", "", "", ""])
        for g in n["gpus"]:
            rows.append(
                [
                    n["name"],
                    n["state"],
                    str(g["index"]),
                    _clip(g["name"], 22),
                    f"{format_mib(g['mem_used_mb'])}/{format_mib(g['mem_total_mb'])}",
                    f"{g['util_percent']}%" if g["util_percent"] is not None else "-",
                    format_mib(max(0, g["free_mb"])) + ("" if g["schedulable"] else " (off)"),
                    ",".join(map(str, g["jobs"])) or "-",
                ]
            )
            for pr in g["processes"]:
                proc_rows.append(
                    [
                        f"{n['name']}:{g['index']}",
                        str(pr["pid"]),
                        pr["user"],
                        format_mib(pr["used_mb"]) if pr["used_mb"] is not None else "?",
                        f"job {pr['job_id']}" if pr["managed"] else "external",
                    ]
                )
    out = table(["NODE", "STATE", "GPU", "NAME", "MEMORY", "UTIL", "FREE", "JOBS"], rows)
    if procs:
        out += "\n\n" + table(["GPU", "PID", "USER", "MEM", "OWNER"], proc_rows)
    return out


def status_text(doc: dict[str, Any]) -> str:
    counts = doc["counts"]
    shown = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    from nvq.cli.render_ops import status_lead, status_tail

    parts = [
        *status_lead(doc),  # open alerts first: they are what needs a person
        f"nvq daemon pid {doc['daemon']['pid']} (v{doc['daemon']['version']}), "
        f"up {format_duration(time.time() - doc['daemon']['started_at'])}",
        f"jobs: {shown or 'none'}"
        + (f"; {doc['pending_reaps']} pending kills" if doc["pending_reaps"] else ""),
        "",
        nodes_table(doc["nodes"]),
    ]
    for n in doc["nodes"]:
        if n.get("error") and n["state"] != "up":
            parts.append(f"  {n['name']}: {n['error']}")
    if doc["jobs"]:
        parts += ["", jobs_table(doc["jobs"])]
    parts += status_tail(doc)
    return "\n".join(parts)


def events_table(events: list[dict[str, Any]]) -> str:
    rows = [
        [
            str(e["id"]),
            time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e["time"])),
            e["kind"],
            str(e["job_id"]) if e["job_id"] is not None else "-",
            e["node"] or "-",
            _clip(", ".join(f"{k}={v}" for k, v in (e.get("data") or {}).items()), 60),
        ]
        for e in events
    ]
    return table(["ID", "TIME", "KIND", "JOB", "NODE", "DATA"], rows)
