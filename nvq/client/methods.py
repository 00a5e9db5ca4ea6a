"""Every request of `Client` and `AsyncClient`, defined once: what each method sends
and how its answer is read. A method builds the request; `Client` binds it as a
blocking call and `AsyncClient` as an awaitable one (see `nvq.client.calls.Call`), so
adding a request to both clients is one method in its family (`job_requests`,
`queue_requests`, `daemon_requests`). Streams (`logs`, `subscribe`) iterate
differently in each and are written in each client.
"""

from __future__ import annotations

from nvq.client.calls import AwaitingBinding, BlockingBinding, Call, reads, returns
from nvq.client.daemon_requests import DaemonRequests
from nvq.client.job_requests import JobRequests
from nvq.client.queue_requests import QueueRequests

__all__ = ["Awaiting", "Blocking", "Call", "Requests", "reads", "returns"]


class Requests(JobRequests, QueueRequests, DaemonRequests):
    """The requests both clients make, each returning the request it sends."""


class Blocking(Requests, BlockingBinding):
    """`Requests` as blocking calls over `request` (the client's transport)."""


class Awaiting(Requests, AwaitingBinding):
    """`Requests` as coroutines over `request` (the client's transport)."""
