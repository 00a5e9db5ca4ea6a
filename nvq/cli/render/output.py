"""Printing a command's result: one JSON document with --json, else its text."""

from __future__ import annotations

import sys
from typing import Any

import msgspec

from nvq.world.secrets import shown_json


def emit(data: Any, as_json: bool, text: str | None = None, *, reveal: bool = False) -> None:
    """`reveal`: show the values of secret-looking variables in jobs' environments
    (hidden by default, see nvq.world.secrets)."""
    if as_json:
        if reveal:
            sys.stdout.write(msgspec.json.format(msgspec.json.encode(data), indent=2).decode() + "\n")
        else:
            sys.stdout.write(shown_json(data) + "\n")
    elif text is not None:
        print(text)
