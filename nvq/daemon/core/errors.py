"""Errors a request ends with: `RequestError` carries a message shown to the user as
is (exit 1); `map_exceptions` turns the domain's own refusals into it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from nvq.backup import BackupError
from nvq.domain.lanes import LaneError
from nvq.domain.transitions import TransitionError


class RequestError(Exception):
    """A CLI request that cannot be carried out; the message is shown as is."""

    exit_code = 1


class BadRequest(RequestError):
    """A request that can never succeed as given (exit 2, like the CLI's own checks of
    its flags): the user must change it."""

    exit_code = 2


# Refusals whose message is already written for the user. Not LookupError or
# ValueError in general: raised by a bug, those must stay internal errors (logged).
USER_ERRORS: Mapping[type[Exception], type[Exception]] = {
    TransitionError: RequestError,
    LaneError: RequestError,
    BackupError: RequestError,
}


@contextmanager
def map_exceptions(
    mapping: Mapping[type[Exception], type[Exception]] = USER_ERRORS, *, template: str = "{}"
) -> Iterator[None]:
    """Re-raise an exception of a key type as its value type, with the message
    `template` formatted with the original one (and no chained traceback: the
    original is the user's mistake, not the daemon's)."""
    try:
        yield
    except Exception as exc:
        for from_exc, to_exc in mapping.items():
            if isinstance(exc, from_exc):
                raise to_exc(template.format(exc)) from None
        raise
