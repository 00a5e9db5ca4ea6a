"""What a client call raises: one line for a person, and the exit status the CLI uses."""

from __future__ import annotations

from nvq.errors import UserError

# a connection that broke mid-answer (the daemon died or was stopped meanwhile)
WENT_AWAY = "the daemon went away while answering ({})"


class ClientError(UserError):
    """The daemon refused a request (no such job, not allowed, bad value) or could not
    be asked. `str(exc)` is one line; `exit_code` is what `nvq` exits with for it."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class DaemonUnavailable(ClientError):
    """No daemon answers on the socket (and none was started, or starting it failed)."""
