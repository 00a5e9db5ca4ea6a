"""Running a test's async body."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio


def run(fn: Callable[[], Awaitable[None]]) -> None:
    """`anyio.run` on asyncio, with a lone failure lifted out of the exception groups
    that task groups wrap it in, so pytest shows the assertion itself."""
    try:
        anyio.run(fn, backend="asyncio")
    except BaseExceptionGroup as group:
        error: BaseException = group
        while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
            error = error.exceptions[0]
        if error is group:
            raise
        raise error from None
