"""What every notification channel raises when it cannot deliver."""

from __future__ import annotations


class DeliveryError(Exception):
    """The channel refused or failed; the message says why, in one line."""
