"""The terminal UI, `nvq queue`. Textual is imported here only when the UI opens, so
the plain CLI calls never load it."""

from __future__ import annotations

from pathlib import Path


def run(home: Path | None = None) -> int:
    from nvq.client.asynchronous import AsyncClient
    from nvq.tui.app import QueueApp

    QueueApp(AsyncClient(home, observing=True)).run()  # starts no daemon stopped on purpose
    return 0
