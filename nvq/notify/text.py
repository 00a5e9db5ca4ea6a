"""The words of a notification: a subject line and a short body, shared by e-mail,
the desktop and the webhooks."""

from __future__ import annotations

from typing import Any

from nvq.values import format_duration


def header_text(text: str) -> str:
    """`text` on one line of printable characters: a header cannot hold a newline
    (EmailMessage refuses it, and the channel would fail on that message forever),
    and a job's name is whatever its submitter typed."""
    return " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())


def subject(payload: dict[str, Any]) -> str:
    if payload["type"] == "alert":
        a = payload["alert"]
        return header_text(f"[nvq] {a['severity']}: {a['message']}")[:200]
    j = payload["job"]
    if payload.get("moment") == "time-limit-80":
        limit = format_duration(j["timeout"]) if j.get("timeout") else "its time limit"
        return header_text(f"[nvq] job {j['id']} ({j['name']}) has run 80 % of {limit}")
    return header_text(f"[nvq] job {j['id']} ({j['name']}) {j['state']}")


def body(payload: dict[str, Any]) -> str:
    if payload["type"] == "alert":
        a = payload["alert"]
        lines = [a["message"], "", f"alert {a.get('id', '?')} ({a['kind']})"]
        lines.append("acknowledge it with: nvq queue ack " + str(a.get("id", "ID")))
        if a.get("detail"):
            lines += ["", "output tail:", a["detail"]]
        return "\n".join(lines) + "\n"
    j = payload["job"]
    lines = [
        f"job {j['id']} ({j['name']}) {j['state']}" + (f": {j['reason']}" if j["reason"] else ""),
        f"command:   {j['command'] or '(an interactive shell)'}",
        f"node:      {j['node']} (attempt {j['attempt']})",
    ]
    if j["exit_code"] is not None:
        lines.append(f"exit code: {j['exit_code']}")
    if j.get("stderr_tail") and j["state"] != "completed":
        lines += ["", "output tail:", j["stderr_tail"]]
    return "\n".join(lines) + "\n"
