"""nvq: a GPU job queue for your own machines, over SSH.

`nvq.Client`, `nvq.AsyncClient` and `nvq.ClientError` are the Python API (see
`nvq.client`); they load on first use, so `import nvq` stays cheap for the CLI."""

from __future__ import annotations

TYPE_CHECKING = False  # not from typing: importing it costs every CLI call

__version__ = "0.1.0"

if TYPE_CHECKING:
    from typing import Any

    from nvq.client import AsyncClient, Client, ClientError, DaemonUnavailable

__all__ = ["AsyncClient", "Client", "ClientError", "DaemonUnavailable", "__version__"]

_CLIENT_NAMES = frozenset({"AsyncClient", "Client", "ClientError", "DaemonUnavailable"})


def __getattr__(name: str) -> Any:
    if name in _CLIENT_NAMES:
        import nvq.client

        return getattr(nvq.client, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
