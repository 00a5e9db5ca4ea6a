"""The one way to talk to the nvq daemon, from Python or from the `nvq` CLI.

    import nvq

    with nvq.Client() as q:
        job = q.submit(["python", "train.py"], vram="20GiB")
        print(q.wait(job.id).jobs[0].state)

`Client` is blocking; `AsyncClient` has the same methods for anyio programs. Each
method sends one request over `$NVQ_HOME/daemon.sock` (starting the daemon when none
runs) and returns its answer decoded into a msgspec Struct of `nvq.control` or
`nvq.model`. Failures raise `ClientError` (`DaemonUnavailable` when nothing answers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nvq.client.errors import ClientError, DaemonUnavailable
from nvq.client.spec import job_spec
from nvq.client.sync import Client

if TYPE_CHECKING:
    from nvq.client.asynchronous import AsyncClient

__all__ = ["AsyncClient", "Client", "ClientError", "DaemonUnavailable", "job_spec"]


def __getattr__(name: str) -> Any:
    # anyio costs a CLI call milliseconds it never needs: load it only when asked.
    if name == "AsyncClient":
        from nvq.client.asynchronous import AsyncClient

        return AsyncClient
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
