"""A reply read over the plain wire (JSON objects as dicts) shaped for the renderers,
which read a reply Struct by attribute: every object becomes a `Fields`, a dict whose
keys also read as attributes, and a field the daemon left out (UNSET) reads as None,
as the renderers expect of it."""

from __future__ import annotations

TYPE_CHECKING = False  # typing itself costs the CLI call this module serves
if TYPE_CHECKING:
    from typing import Any


class Fields(dict[str, "Any"]):  # "Any": typing is not imported at run time
    def __getattr__(self, name: str) -> Any:
        return self.get(name)


def fields(value: Any) -> Any:
    if isinstance(value, dict):
        return Fields({k: fields(v) for k, v in value.items()})
    if isinstance(value, list):
        return [fields(v) for v in value]
    return value
