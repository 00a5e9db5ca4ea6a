"""Each request is defined once (`nvq.client.methods.Requests`) and reaches both
clients: the same parameters, a blocking answer from `Client`, an awaitable one from
`AsyncClient`, each decoded the same way."""

from __future__ import annotations

import inspect

import anyio
import msgspec
import pytest

from nvq import control as c
from nvq.client import AsyncClient, Client, ClientError
from nvq.model import Job, JobState


def _public(cls: type[Client] | type[AsyncClient]) -> dict[str, list[inspect.Parameter]]:
    """Method name → its parameters (what it returns differs by kind, by design)."""
    client = cls("/nonexistent")
    names = [n for n in dir(client) if not n.startswith("_") and n not in ("root", "autostart", "observing")]
    return {n: list(inspect.signature(getattr(client, n)).parameters.values()) for n in names}


def test_both_clients_offer_the_same_methods_with_the_same_parameters() -> None:
    sync, asynchronous = _public(Client), _public(AsyncClient)
    # Closing is spelled the way each kind of `with` calls it.
    assert sync.pop("close") == asynchronous.pop("aclose")
    # The terminal commands (job shell, exec, forward) take the blocking socket itself.
    assert [p.name for p in sync.pop("open_stream")] == ["request"]
    assert sync == asynchronous
    assert [p.name for p in sync["cancel"]] == ["ids", "array", "select"]


JOB = msgspec.to_builtins(
    Job(id=7, name="x", state=JobState.PENDING, command="true", user="u", submitter="u",
        created_at=0.0)
)


class Scripted(Client):
    """Answers every request with `answer` and records what was sent."""

    def __init__(self, answer: c.Done) -> None:
        super().__init__("/nonexistent", autostart=False)
        self.answer = answer
        self.sent: list[c.Request] = []

    def request(self, request: c.Request) -> c.Done:
        self.sent.append(request)
        return self.answer


class AsyncScripted(AsyncClient):
    def __init__(self, answer: c.Done) -> None:
        super().__init__("/nonexistent", autostart=False)
        self.answer = answer
        self.sent: list[c.Request] = []

    async def request(self, request: c.Request) -> c.Done:
        self.sent.append(request)
        return self.answer


def test_a_request_is_built_and_its_answer_decoded_alike_by_both() -> None:
    q = Scripted(c.Done(data=[JOB]))
    jobs = q.cancel([7], array=True)
    assert q.sent == [c.Cancel(ids=[7], array=True)]
    assert [(type(j), j.id) for j in jobs] == [(Job, 7)]

    aq = AsyncScripted(c.Done(data=[JOB]))
    ajobs = anyio.run(lambda: aq.cancel(7, array=True))
    assert aq.sent == q.sent and ajobs == jobs


def test_answers_read_other_than_by_decoding() -> None:
    q = Scripted(c.Done(data=[JOB], exit_code=2))
    waited = q.wait(7, timeout=1)
    assert (waited.exit_code, [j.id for j in waited.jobs]) == (2, [7])
    assert q.sent == [c.Wait(ids=[7], timeout=1)]
    assert Scripted(c.Done(data={"loss": 0.5})).result(7) == {"loss": 0.5}
    assert Scripted(c.Done(data={"stopping": True})).stop_daemon().runners_left == 0


def test_an_answer_of_the_wrong_shape_is_a_client_error() -> None:
    with pytest.raises(ClientError, match="unexpected reply from the daemon"):
        Scripted(c.Done(data={"not": "a list"})).cancel(7)
