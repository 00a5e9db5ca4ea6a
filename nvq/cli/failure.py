"""How a CLI call that cannot go on ends: one line on stderr (with --json, a JSON
error document on stdout) and the exit code. Shared by the fast path and typer's."""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and msgspec cost a CLI call milliseconds
    from typing import NoReturn


def fail(message: str, code: int, as_json: bool) -> NoReturn:
    if as_json:
        from nvq.cli.render.output import emit

        emit({"error": message, "exit_code": code}, True)
    else:
        print(f"nvq: {message}", file=sys.stderr)
    sys.exit(code)
