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

TYPE_CHECKING = False  # not from typing: the CLI's plain reads import this package

if TYPE_CHECKING:
    from typing import Any

    from nvq.client.asynchronous import AsyncClient
    from nvq.client.errors import ClientError, DaemonUnavailable
    from nvq.client.spec import job_spec
    from nvq.client.sync import Client

__all__ = ["AsyncClient", "Client", "ClientError", "DaemonUnavailable", "job_spec"]

# Loaded when first asked for: a CLI call that only needs `nvq.client.plain` (or the
# errors) must not pay for msgspec and the typed requests, nor anyio for AsyncClient.
_WHERE = {
    "AsyncClient": "nvq.client.asynchronous",
    "Client": "nvq.client.sync",
    "ClientError": "nvq.client.errors",
    "DaemonUnavailable": "nvq.client.errors",
    "job_spec": "nvq.client.spec",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
