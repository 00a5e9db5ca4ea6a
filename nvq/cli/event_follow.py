"""`nvq queue events --follow`: each event as it happens, one line each (with --json,
one compact `StreamEvent` a line, flushed), filtered by the daemon; `--until-done`
ends the stream once every `--job` has ended. A watcher (an agent host that turns each
line a command prints into a wake-up) gets one line per job that ended."""

from __future__ import annotations

import sys
from typing import NoReturn

import msgspec

from nvq import control as c
from nvq.client import Client
from nvq.client.errors import ClientError
from nvq.client.sync import WentAway
from nvq.control.stream_events import StreamEvent
from nvq.model import Event
from nvq.world.secrets import hide_secrets

# Why a stream ends that was not done: the daemon stopped (or died) under it.
STOPPED = "the daemon stopped: the stream ended after event {0}; follow again with --since {0}"
STOPPED_EARLY = "the daemon stopped before any event came: follow again"


def follow(since: int, request: c.Subscribe, *, as_json: bool, until_done: bool) -> int:
    """Print the stream until Ctrl-C, until every `--job` has ended (`until_done`:
    exit 0), or until the daemon goes away (one line, exit 1)."""
    if until_done and not request.jobs:
        _fail("--until-done needs --job ID: the jobs whose end it waits for", 2, as_json)
    if until_done and request.classes and "end" not in request.classes:
        request = msgspec.structs.replace(request, classes=(*request.classes, "end"))
    waiting = set(request.jobs)
    last = since
    try:
        # Only watching: it starts no daemon stopped on purpose (nvq.client.stop_mark).
        for event in Client(observing=True).subscribe(since, follow=request):
            if not as_json and last == since:
                # Over the first line, not before the daemon took the filters: a
                # refused one prints its one line and nothing else.
                from nvq.cli.render.events import HEADER

                print(HEADER, flush=True)
            last = event.id
            print(_line(event, as_json), flush=True)
            if until_done and _ended(event) and event.job_id is not None:
                waiting.discard(event.job_id)
                if not waiting:
                    return 0
    except WentAway:
        pass
    except ClientError as exc:  # a filter refused, or no daemon runs
        _fail(str(exc), exc.exit_code, as_json)
    # The connection closed, or the daemon ended the stream: it is stopping.
    _fail(STOPPED.format(last) if last != since else STOPPED_EARLY, 1, as_json)


def _fail(message: str, code: int, as_json: bool) -> NoReturn:
    """One line either way: with --json a compact error document, so that every line
    of the stream is one JSON object."""
    if as_json:
        print(msgspec.json.encode({"error": message, "exit_code": code}).decode(), flush=True)
    else:
        print(f"nvq: {message}", file=sys.stderr, flush=True)
    sys.exit(code)


def _line(event: Event, as_json: bool) -> str:
    if as_json:
        return msgspec.json.encode(hide_secrets(event)).decode()
    from nvq.cli.render.queue import event_line

    return event_line(event)


def _ended(event: Event) -> bool:
    """An end that still stands: a job requeued since that end has not ended."""
    return isinstance(event, StreamEvent) and event.end is not None and event.end.current
