"""Every request's handler and who may send it, registered where the handler is
written: `@handles(c.Cancel, may=owner("cancel"))` above it. The control server looks
both up by the request's type (nvq.daemon.handlers gathers the modules, so each
registers on import); the reply is the one nvq.control.REPLIES names, where the client
reads it too. tests/daemon/test_reply_types.py holds the tables complete."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from nvq import control as c
from nvq.daemon.handlers.context import Context
from nvq.domain.permissions import Permission

# The request parameter is each handler's own request type, and the reply the one
# nvq.control.REPLIES names for it (a `Coded` reply where the answer sets the exit
# code): Any here, so the table can hold them all. The lookup by type guarantees the
# request's match; tests/daemon/test_reply_types.py holds each annotation to REPLIES.
Handler = Callable[[Context, Any, str], Awaitable[Any]]
# Who may send a request (see nvq.domain.permissions), enforced by the control server
# before the handler runs. A request that reads when it names nothing to change (a
# note without text, a lane without an action) is anyone's; then its rule is a
# function of the request.
PermissionRule = Permission | Callable[[Any], Permission]

HANDLERS: dict[type[c.Request], Handler] = {}
PERMISSIONS: dict[type[c.Request], PermissionRule] = {}

H = TypeVar("H", bound=Handler)


def handles(request: type[c.Request], *, may: PermissionRule) -> Callable[[H], H]:
    """Register the function below as `request`'s handler, sent by whom `may` allows."""

    def register(handler: H) -> H:
        if request in HANDLERS:
            raise TypeError(f"{request.__name__} is handled twice")
        HANDLERS[request] = handler
        PERMISSIONS[request] = may
        return handler

    return register


def allows(request: type[c.Request], may: PermissionRule) -> None:
    """Who may open a stream that another wing serves (its rule, without a handler)."""
    PERMISSIONS[request] = may


def permission(request: c.Request) -> Permission:
    rule = PERMISSIONS[type(request)]
    return rule if isinstance(rule, Permission) else rule(request)
