"""The commonest read commands without typer: `job show ID`, `job ls`, `job logs ID` and
`queue status`, each bare or with `--json` (in any order), and nothing else.

Importing typer and click and building the command tree costs a CLI call more than the
interpreter's own start; a read that a script runs in a loop should cost little more
than the socket exchange. When argv has exactly one of these shapes, the command here
answers it; anything else (another option, `7[3]`, `--help`, a malformed id) goes to
typer, which prints what it always printed. Each command below repeats its typer twin
in nvq.cli.commands: same client call, same rendering, same exit status.
tests/cli/test_fast_path.py runs both for the same argv and compares every byte, so a
change to a twin that this one does not follow fails there. NVQ_CLI_TYPER=1 turns this
path off (the test uses it to run the typer twin)."""

from __future__ import annotations

import os
import sys

JSON = "--json"


TYPE_CHECKING = False
if TYPE_CHECKING:  # typing itself costs the calls this module exists to make cheap
    from collections.abc import Callable
    from typing import Any


class FastCommand:
    __slots__ = ("body", "job_id")

    def __init__(self, body: Callable[[int | None, bool], int], job_id: int | None) -> None:
        self.body = body
        self.job_id = job_id

    def run(self, as_json: bool) -> int:
        """The exit status; a refusal prints its one line, as the typer path does."""
        from nvq.cli.failure import fail
        from nvq.client.errors import ClientError

        try:
            return self.body(self.job_id, as_json)
        except ClientError as exc:
            fail(str(exc), exc.exit_code, as_json)
        except KeyboardInterrupt:
            return 130
        except BrokenPipeError:
            return 0


def job_show(job_id: int | None, as_json: bool) -> int:
    assert job_id is not None
    from nvq.cli.render.jobs import job_detail

    if _plain({"type": "show", "id": job_id, "logs": 0}, as_json, job_detail):
        return 0
    from nvq.cli.render.output import emit
    from nvq.client.sync import Client

    doc = Client().show(job_id, logs=0)
    emit(doc, as_json, job_detail(doc), reveal=False)
    return 0


def job_ls(job_id: int | None, as_json: bool) -> int:
    from nvq.cli.render.jobs import window_text

    # bare `job ls`: every field of the window at its default
    if _plain({"type": "ls_window"}, as_json, window_text):
        return 0
    from nvq.cli.job_window import print_window, window_request

    print_window(
        window_request(
            states=[], user=None, tag=None, array=None, since=None, limit=None, every=False
        ),
        as_json,
    )
    return 0


def job_logs(job_id: int | None, as_json: bool) -> int:
    from nvq.cli.logs_output import print_logs

    assert job_id is not None
    print_logs(job_id, lines=50, follow=False, stream="both", attempt=None, as_json=as_json)
    return 0


def queue_status(job_id: int | None, as_json: bool) -> int:
    from nvq.cli.render.queue import status_text

    if _plain({"type": "status"}, as_json, status_text):
        return 0
    from nvq.cli.render.output import emit
    from nvq.client.sync import Client

    doc = Client().status()
    emit(doc, as_json, status_text(doc))
    return 0


def _plain(request: dict[str, object], as_json: bool, render: Callable[[Any], str]) -> bool:
    """Answer over the plain wire (no msgspec, no typed replies): the `--json` text as
    the daemon formatted it, or the data rendered by the typed path's own function.
    False when no daemon answers: the typed path then starts one or says why not."""
    from nvq.client.inside_job import job_socket
    from nvq.client.plain import NotAnswering, ask
    from nvq.home import Home, default_root

    path = job_socket() or Home(default_root()).socket
    try:
        data, _ = ask(path, request, "json" if as_json else "data")
    except NotAnswering:
        return False
    if as_json:
        sys.stdout.write(data + "\n")
        return True
    from nvq.cli.render.fields import fields

    print(render(fields(data)))
    return True


# (group, command) → (its body, whether it takes one job id)
COMMANDS: dict[tuple[str, str], tuple[Callable[[int | None, bool], int], bool]] = {
    ("job", "show"): (job_show, True),
    ("job", "ls"): (job_ls, False),
    ("job", "logs"): (job_logs, True),
    ("queue", "status"): (queue_status, False),
}


def _plain_id(arg: str) -> int | None:
    # ASCII digits only: click's int() would take "+7", " 7", "7_0" and "٧", and say
    # its own words about what it refuses; those go to typer.
    if arg.isascii() and arg.isdigit():
        return int(arg)
    return None


def fast_command(args: list[str]) -> FastCommand | None:
    """The command here that answers `nvq ARGS`, or None: typer's to run."""
    if len(args) < 2 or os.environ.get("NVQ_CLI_TYPER"):
        return None
    entry = COMMANDS.get((args[0], args[1]))
    if entry is None:
        return None
    body, takes_id = entry
    rest = list(args[2:])
    if rest.count(JSON) > 1:
        return None
    if JSON in rest:
        rest.remove(JSON)
    if not takes_id:
        return FastCommand(body, None) if not rest else None
    if len(rest) != 1:
        return None
    job_id = _plain_id(rest[0])
    return FastCommand(body, job_id) if job_id is not None else None
