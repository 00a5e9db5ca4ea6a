"""How a CLI call that cannot go on ends: one line on stderr (with --json, a JSON
error document on stdout) and the exit code. Shared by the fast path and typer's."""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and msgspec cost a CLI call milliseconds
    from collections.abc import Callable
    from typing import NoReturn


def fail(message: str, code: int, as_json: bool) -> NoReturn:
    if as_json:
        from nvq.cli.render.output import emit

        emit({"error": message, "exit_code": code}, True)
    else:
        print(f"nvq: {message}", file=sys.stderr)
    sys.exit(code)


def guarded(body: Callable[[], int], as_json: bool) -> int:
    """`body`'s exit status; what it raises that a user should see as one line (a
    refusal, a file this user may not touch, a full disk) is printed as such. Both
    ways into a command (typer's and the fast paths) end through here."""
    import errno

    from nvq.client.errors import ClientError

    try:
        return body()
    except ClientError as exc:
        fail(str(exc), exc.exit_code, as_json)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except PermissionError as exc:
        # What this user may not touch on this machine (the queue's home, when a
        # member runs what is the queue owner's to run): one line, never a traceback.
        where = f"{exc.filename}: " if exc.filename else ""
        fail(f"{where}permission denied (it is not yours to change)", 1, as_json)
    except OSError as exc:
        # A full disk where this command writes (a snapshot, a pull): one line.
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        where = f" ({exc.filename})" if exc.filename else ""
        fail(f"no space left on the disk{where}: free some space and try again", 1, as_json)
