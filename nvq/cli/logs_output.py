"""`job logs`: a job's output as it is printed, by the typer command and the fast path
alike. A member of an array is named (`7[3]`) on stderr, so stdout stays the job's own
bytes."""

from __future__ import annotations

import sys
from typing import Literal

from nvq.cli.render.jobs import member_label
from nvq.cli.render.output import emit
from nvq.cli.render.terminal_safe import Neutraliser
from nvq.client.sync import Client


def print_logs(
    job_id: int,
    *,
    lines: int,
    follow: bool,
    stream: Literal["stdout", "stderr", "setup", "both"],
    attempt: int | None,
    as_json: bool,
    marks: bool = False,
    raw: bool = False,
) -> None:
    """`raw`: every byte as the job wrote it, even to a terminal (see
    nvq.cli.render.terminal_safe)."""
    client = Client()
    member = member_label(client.show(job_id))
    chunks = client.logs(
        job_id, lines=lines, follow=follow, stream=stream, attempt=attempt, marks=marks
    )
    if as_json:
        text = b"".join(chunks).decode(errors="replace")
        doc = {"id": job_id, "stream": stream, "text": text}
        emit({**doc, "member": member} if member else doc, True)
        return
    if member is not None:
        print(f"==> job {job_id} ({member}) <==", file=sys.stderr, flush=True)
    safe = None if raw or not sys.stdout.isatty() else Neutraliser()
    for data in chunks:
        sys.stdout.buffer.write(data if safe is None else safe.feed(data))
        sys.stdout.buffer.flush()
    if safe is not None:
        sys.stdout.buffer.write(safe.end())
        sys.stdout.buffer.flush()
