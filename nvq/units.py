"""Compatibility alias of `nvq.values` for callers not yet moved; the integrator
removes it once nothing imports it. `parse_duration` here keeps its old meaning
(zero allowed) so those callers behave as before."""

from nvq.values import format_duration, format_mib, parse_size
from nvq.values import parse_duration as _parse_duration


def parse_duration(text: str) -> float:
    return _parse_duration(text, allow_zero=True)


__all__ = ["format_duration", "format_mib", "parse_duration", "parse_size"]
