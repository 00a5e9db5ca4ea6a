"""`job logs`: a job's output as it is printed, by the typer command and the fast path
alike. A member of an array is named (`7[3]`) on stderr, so stdout stays the job's own
bytes."""

from __future__ import annotations

import sys

from nvq.cli.render.array_member import member_label
from nvq.cli.render.terminal_safe import Neutraliser

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and msgspec cost the CLI call this module serves
    from collections.abc import Iterator
    from typing import Literal


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
    from nvq.cli.reading import ask

    shown, _ = ask({"type": "show", "id": job_id, "logs": 0, "reveal": False}, "data")
    member = member_label(shown)
    request = {"type": "logs", "id": job_id, "lines": lines, "follow": follow,
               "stream": stream, "attempt": attempt, "marks": marks}
    chunks = _chunks(request)
    if as_json:
        from nvq.cli.reading import print_json

        text = b"".join(chunks).decode(errors="replace")
        doc = {"id": job_id, "stream": stream, "text": text}
        print_json({**doc, "member": member} if member else doc)
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


def _chunks(request: dict[str, object]) -> Iterator[bytes]:
    """The log's chunks over the plain wire, else through the typed client (which
    starts a daemon, or says why it cannot)."""
    from nvq.cli.reading import socket_path
    from nvq.client.plain import NotAnswering, open_stream

    try:
        return open_stream(socket_path(), request)
    except NotAnswering:
        pass
    from nvq.client.sync import Client

    typed = {k: v for k, v in request.items() if k != "type"}
    return Client().logs(**typed)  # type: ignore[arg-type]
