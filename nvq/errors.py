"""What nvq may raise, in one tree (after httpcore's `_exceptions.py`). Every exception
class nvq defines derives from `NvqError` (tests/test_errors.py holds it), through one
of two branches:

    NvqError
    ├── UserError   a refusal written for the person who asked: one line, shown as is,
    │   │           and the exit status `nvq` ends with when nothing more specific
    │   │           catches it (1)
    │   └── BadInput  what they gave can never work as given: change it (exit 2)
    └── Internal    not the asker's doing: a node, a link, the store, a channel or nvq
                    itself failed; the daemon answers "internal error: …" and logs it
                    unless the code that called knows what to say

A handler's UserError is its request's answer: the daemon runs every handler under
`map_exceptions(USER_ERRORS)` (nvq.daemon.core.errors), which gives the branch its
`RequestError` (exit 1) or `BadRequest` (BadInput, exit 2), the same message. Elsewhere
`map_exceptions` turns one kind into another where a caller knows better.

This module imports nothing: every front end and every floor may use it."""

from __future__ import annotations

TYPE_CHECKING = False  # not from typing: importing it costs every CLI call
if TYPE_CHECKING:
    from collections.abc import Mapping
    from types import TracebackType


class NvqError(Exception):
    """The root of every exception nvq defines."""


class UserError(NvqError):
    """A refusal whose message is written for the person who asked: one line, shown as
    is. `exit_code` is the status `nvq` ends with for it."""

    exit_code: int = 1


class BadInput(UserError):
    """What the person gave (a flag, a file, a name) can never work as given."""

    exit_code = 2


class Internal(NvqError):
    """A failure that is not the asker's doing (a node, a link, the store, a channel, a
    bug): its message says what failed, for the log and for an operator."""


class map_exceptions:
    """Re-raise an exception of a key type as its value type, with the message
    `template` formatted with the original one (and no chained traceback: the
    original is the user's mistake, not nvq's). One that already is of its value type
    passes as it is, keeping its own class and exit status. The first key that matches
    wins."""

    def __init__(
        self, mapping: Mapping[type[Exception], type[Exception]], *, template: str = "{}"
    ) -> None:
        self.mapping = mapping
        self.template = template

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not isinstance(exc, Exception):
            return
        for from_exc, to_exc in self.mapping.items():
            if isinstance(exc, from_exc):
                if isinstance(exc, to_exc):
                    return
                raise to_exc(self.template.format(exc)) from None
