"""Printing a command's result: one JSON document with --json, else its text."""

from __future__ import annotations

import sys
from typing import Any

import msgspec


def emit(data: Any, as_json: bool, text: str | None = None) -> None:
    if as_json:
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(data), indent=2).decode() + "\n")
    elif text is not None:
        print(text)
