"""The root of every exception the runner defines. The runner may not import nvq (the
daemon's `nvq.errors.NvqError` is the other side's), so it has its own: one class, so
a reader finds in one place what the node agent may raise (tests/runner/test_errors.py
holds it). Each is a failure on the node, ending up in a journaled event, a reply's
`error` or the runner's log."""

from __future__ import annotations


class NvqRunnerError(Exception):
    """The root of every exception nvq_runner defines."""
