"""Errors a request ends with: `RequestError` carries a message shown to the user as
is (exit 1), `BadRequest` one the user must change (exit 2). Both are of nvq's
UserError branch (`nvq.errors`); `map_exceptions` answers the rest of that branch,
raised by the domain's own refusals, as one of them."""

from __future__ import annotations

from collections.abc import Mapping

from nvq import errors
from nvq.errors import BadInput, UserError


class RequestError(UserError):
    """A CLI request that cannot be carried out; the message is shown as is."""

    exit_code = 1


class BadRequest(RequestError, BadInput):
    """A request that can never succeed as given (exit 2, like the CLI's own checks of
    its flags): the user must change it."""

    exit_code = 2


# The UserError branch, as a request's answer. Not LookupError or ValueError in
# general: raised by a bug, those must stay internal errors (logged).
USER_ERRORS: Mapping[type[Exception], type[Exception]] = {
    BadInput: BadRequest,
    UserError: RequestError,
}


def map_exceptions(
    mapping: Mapping[type[Exception], type[Exception]] = USER_ERRORS, *, template: str = "{}"
) -> errors.map_exceptions:
    """`nvq.errors.map_exceptions`, by default over the UserError branch."""
    return errors.map_exceptions(mapping, template=template)
