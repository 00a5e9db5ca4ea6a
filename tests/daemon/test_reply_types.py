"""One table names each request's reply (nvq.control.REPLIES): every handler is
declared to return it, and the client decodes it."""

from __future__ import annotations

import sys
import typing

from nvq import control as c
from nvq.client.methods import Call, Requests
from nvq.daemon.handlers import HANDLERS, PERMISSIONS

# answered in chunks, as a terminal session or a blob exchange, not with one reply
STREAMS = {c.Logs, c.Subscribe, c.Shell, c.Exec, c.Forward, c.ReceiveSnapshot}


def test_every_request_has_a_handler_a_permission_and_a_reply() -> None:
    assert set(HANDLERS) == set(c.REPLIES)
    assert set(PERMISSIONS) == set(c.REPLIES) | STREAMS
    assert set(typing.get_args(c.Request)) == set(c.REPLIES) | STREAMS


def test_every_handler_returns_its_requests_reply() -> None:
    for request, handler in HANDLERS.items():
        # the annotation as written (postponed), read in the handler's own module
        written = handler.__annotations__["return"]
        got = eval(written, vars(sys.modules[handler.__module__]))
        want = c.REPLIES[request]
        if typing.get_origin(got) is c.Coded:  # a verdict too: it sets the exit code
            (got,) = typing.get_args(got)
        assert got == want, f"{handler.__name__} returns {got}, {request.__name__} wants {want}"


def test_the_client_reads_the_tables_reply() -> None:
    # Requests gathers one class per request family: every method is in one of them.
    methods = {k: v for cls in Requests.__mro__ for k, v in vars(cls).items()}
    calls = [v for v in methods.values() if isinstance(v, Call)]
    # returns() refuses any other type on import; a request with no method of its own
    # is sent with client.ask(request, Reply), held to the same table when it is sent.
    assert calls


def test_a_mismatch_is_refused_when_the_client_is_defined() -> None:
    from nvq.client.methods import returns

    try:
        returns(c.Ping, c.Pulled)
    except TypeError as exc:
        assert "Ping is answered with" in str(exc)
    else:
        raise AssertionError("returns() took a reply REPLIES does not name")
