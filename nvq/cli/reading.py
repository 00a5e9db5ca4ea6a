"""How a read command gets its answer and prints it: one way, whichever door the call
came in by (the typer command after click parsed its options, or nvq.cli.fast when
argv has a plain shape; both call the command's body in nvq.cli.reads).

The answer comes over the plain wire (nvq.control.plain: JSON on the same socket, no
msgspec) when a daemon answers there; else the typed client asks (it starts a daemon,
or says why it cannot) and its answer is shaped exactly as the daemon shapes a plain
one: the `--json` text with secrets hidden, or the data, secrets hidden, as dicts
whose keys read as attributes (nvq.cli.render.fields). The renderers see one kind of
data either way."""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing itself costs the calls this module exists to make cheap
    from collections.abc import Callable
    from typing import Any


# [remote]: the queue host's daemon socket, forwarded to this machine over the shared
# ssh connection (nvq.remote_reads). No typed fallback through it: a daemon that does
# not answer there is the queue host's to start, so NotAnswering goes to the caller,
# which forwards the command whole.
forwarded: str | None = None


def ask(request: dict[str, Any], want: str) -> tuple[Any, int]:
    """(the answer, its exit code): `want="json"` the `--json` text, `"data"` the data
    (as Fields). A refusal raises ClientError with the daemon's words."""
    from nvq.client.plain import NotAnswering
    from nvq.client.plain import ask as ask_plain

    try:
        answer, code = ask_plain(forwarded or socket_path(), request, want)
    except NotAnswering:
        if forwarded is not None:
            raise
        answer, code = _ask_typed(request, want)
    if want == "json":
        return answer, code
    from nvq.cli.render.fields import fields

    return fields(answer), code


def socket_path() -> str:
    """The daemon's socket: inside a job its own queue's, relayed by the runner."""
    import os

    if os.environ.get("NVQ_SOCKET"):
        from nvq.client.inside_job import job_socket

        return str(job_socket())
    from nvq.home_root import root_text, socket_text

    return socket_text(root_text())


def _ask_typed(request: dict[str, Any], want: str) -> tuple[Any, int]:
    """What the daemon would have answered on the plain wire, through the typed client
    (nvq.daemon.serve.control_server does the same to the typed reply)."""
    import msgspec

    from nvq import control as c
    from nvq.client.answers import typed
    from nvq.client.sync import Client
    from nvq.control.plain import json_document
    from nvq.world.secrets import hide_secrets, shown_json

    typed_request = msgspec.convert(request, c.Request)
    done = Client().request(typed_request)
    reply = typed(done, c.REPLIES[type(typed_request)])
    if want == "json":
        return shown_json(json_document(typed_request, reply)), done.exit_code
    return msgspec.to_builtins(hide_secrets(reply)), done.exit_code


def answer(
    request: dict[str, Any], as_json: bool, text: Callable[[Any], str]
) -> tuple[Any, int]:
    """Ask, then print: the daemon's `--json` text, or `text(data)`. (the data, or None
    with --json; the exit code)."""
    if as_json:
        doc, code = ask(request, "json")
        sys.stdout.write(doc + "\n")
        return None, code
    data, code = ask(request, "data")
    print(text(data))
    return data, code


def print_json(doc: Any) -> None:
    """A document the CLI made itself from an answer (`node health`), as `--json`
    prints every document: two-space indents, UTF-8 as it is (what msgspec's
    format writes, without loading msgspec)."""
    import json

    sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
