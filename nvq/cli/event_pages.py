"""`queue events` without --follow, streamed: the log is read a page at a time and each
page printed as it comes, so catching up on a million events never holds them all.

The output is what it always was: a short log is one table (the first page is the
whole log); a longer one prints each event as one line, as `--follow` does, since a
table's column widths would need every row first. `--json` writes the same
document (`{"events": [...]}`), one element at a time. Each page is asked as every read is
(nvq.cli.reading), so the typer command and the fast path print through here."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing itself costs the CLI call this module serves
    from collections.abc import Iterator

    from nvq.model import Event

PAGE = 2000  # events per request


def pages(since: int, limit: int | None, job: int | None) -> Iterator[list[Event]]:
    """The log after `since`, at most `limit` events, in pages."""
    from nvq.cli.reading import ask

    left = limit
    while left is None or left > 0:
        size = PAGE if left is None else min(PAGE, left)
        page, _ = ask({"type": "events", "since": since, "limit": size, "job_id": job}, "data")
        if page:
            yield page
        if len(page) < size:
            return
        since = page[-1].id
        if left is not None:
            left -= len(page)


def print_events(since: int, limit: int | None, job: int | None, as_json: bool) -> None:
    if as_json:
        _print_json(pages(since, limit, job))
        return
    from nvq.cli.render.events import HEADER
    from nvq.cli.render.queue import event_line, events_table

    stream = pages(since, limit, job)
    first = next(stream, [])
    if len(first) < PAGE:
        print(events_table(first))
        return
    print("\n".join([HEADER, *map(event_line, first)]), flush=True)
    for page in stream:
        print("\n".join(map(event_line, page)), flush=True)


def _print_json(stream: Iterator[list[Event]]) -> None:
    """`{"events": [` … `]}` around each event formatted as `emit` formats the whole
    document (two-space indents, UTF-8 as it is: msgspec's format, written by the
    standard library)."""
    import json

    opened = False
    for page in stream:
        for event in page:
            text = json.dumps(event, indent=2, ensure_ascii=False)
            head = '{\n  "events": [\n' if not opened else ",\n"
            print(head + "    " + text.replace("\n", "\n    "), end="")
            opened = True
    print("\n  ]\n}" if opened else '{\n  "events": []\n}', flush=True)
