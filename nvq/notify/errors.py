"""What every notification channel raises when it cannot deliver."""

from __future__ import annotations

from nvq.errors import Internal


class DeliveryError(Internal):
    """The channel refused or failed; the message says why, in one line."""
