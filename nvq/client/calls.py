"""How a request method of the clients is made: `Call` (a method that builds a request
and reads its answer), `returns`/`reads` (which say how), and the two bindings that make
every such method a blocking call (`Client`) or an awaitable one (`AsyncClient`). The
methods themselves, one family per module, are gathered in `nvq.client.methods`.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from nvq import control as c
from nvq.client.answers import typed
from nvq.model import Job

P = ParamSpec("P")
T = TypeVar("T")


class Call(Generic[P, T]):
    """One request method: `build` makes the request from the caller's arguments,
    `read` turns the daemon's `Done` into what the method returns. Looked up on a
    client it is a bound method of that client's kind: blocking on `Client`,
    awaitable on `AsyncClient`."""

    def __init__(
        self, build: Callable[Concatenate[Any, P], c.Request], read: Callable[[c.Done], T]
    ) -> None:
        self.build = build
        self.read = read
        self.__doc__ = build.__doc__
        self.__name__ = build.__name__
        self._signature: inspect.Signature | None = None

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> Call[P, T]: ...
    @overload
    def __get__(self, obj: BlockingBinding, owner: type[Any]) -> Callable[P, T]: ...
    @overload
    def __get__(self, obj: AwaitingBinding, owner: type[Any]) -> Callable[P, Awaitable[T]]: ...
    def __get__(self, obj: Requesting | None, owner: type[Any]) -> Any:
        if obj is None:
            return self
        method = obj._bind(self)
        method.__doc__, method.__name__ = self.__doc__, self.__name__
        method.__signature__ = self.signature()  # type: ignore[attr-defined]
        return method

    def signature(self) -> inspect.Signature:
        """The caller's parameters (for help() and editors), without `self`: made once,
        on first use, rather than for every method when the module loads."""
        if self._signature is None:
            sig = inspect.signature(self.build)
            self._signature = sig.replace(
                parameters=list(sig.parameters.values())[1:],
                return_annotation=inspect.Signature.empty,
            )
        return self._signature


Build = Callable[Concatenate[Any, P], c.Request]


def returns(request: type[c.Request], kind: type[T]) -> Callable[[Build[P]], Call[P, T]]:
    """The answer to `request` is `Done.data` decoded into `kind`: the reply
    nvq.control.REPLIES names for it (written here too so that the method's type is
    known statically; a mismatch fails on import)."""
    _check(request, kind)
    return reads(lambda done: typed(done, kind))


def _check(request: type[c.Request], kind: object) -> None:
    if c.REPLIES[request] != kind:
        raise TypeError(f"{request.__name__} is answered with {c.REPLIES[request]}, not {kind}")


def reads(read: Callable[[c.Done], T]) -> Callable[[Build[P]], Call[P, T]]:
    """The answer is `read(done)`."""

    def make(build: Build[P]) -> Call[P, T]:
        return Call(build, read)

    return make


def wait_result(done: c.Done) -> c.WaitResult:
    jobs = typed(done, list[Job])
    going = [j.id for j in jobs if not j.state.finished]
    return c.WaitResult(jobs=jobs, exit_code=done.exit_code, still_going=going)


def raw_data(done: c.Done) -> Any:
    return done.data


def id_list(ids: int | Sequence[int]) -> list[int]:
    return [ids] if isinstance(ids, int) else list(ids)


class Requesting:
    """What every family of request methods is a part of: a client binds each."""

    def _bind(self, call: Call[P, T]) -> Callable[P, Any]:
        raise NotImplementedError


class BlockingBinding(Requesting):
    """Request methods as blocking calls over `request` (the client's transport)."""

    def request(self, request: c.Request) -> c.Done:
        raise NotImplementedError

    def _bind(self, call: Call[P, T]) -> Callable[P, T]:
        def method(*args: P.args, **kwargs: P.kwargs) -> T:
            return call.read(self.request(call.build(self, *args, **kwargs)))

        return method

    def ask(self, request: c.Request, kind: type[T]) -> T:
        """The answer to `request`, decoded into `kind`, the reply nvq.control.REPLIES
        names for it (TypeError if not): any request, without a method of its own."""
        _check(type(request), kind)
        return typed(self.request(request), kind)


class AwaitingBinding(Requesting):
    """Request methods as coroutines over `request` (the client's transport)."""

    async def request(self, request: c.Request) -> c.Done:
        raise NotImplementedError

    def _bind(self, call: Call[P, T]) -> Callable[P, Awaitable[T]]:
        async def method(*args: P.args, **kwargs: P.kwargs) -> T:
            return call.read(await self.request(call.build(self, *args, **kwargs)))

        return method

    async def ask(self, request: c.Request, kind: type[T]) -> T:
        """The answer to `request`, decoded into `kind`, the reply nvq.control.REPLIES
        names for it (TypeError if not): any request, without a method of its own."""
        _check(type(request), kind)
        return typed(await self.request(request), kind)
