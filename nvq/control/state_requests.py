"""Requests that move jobs through their states (`nvq job cancel|release|pause|resume`),
each naming jobs by id or choosing them with a `JobSelection` (`--user`, `--mine`,
`--state`, `--tag`); members of `Request` (requests.py) like the rest."""

from __future__ import annotations

import msgspec


class JobSelection(msgspec.Struct, frozen=True, kw_only=True):
    """A bulk action's selectors (`job cancel --user alice --state pending --tag x`),
    every one left empty matching all; `mine`: the asking user's jobs. With ids they
    narrow the jobs named; without, they choose among the live jobs the asker may
    change (`nvq.domain.selection`)."""

    user: str | None = None
    mine: bool = False
    states: list[str] | None = None
    tag: str | None = None


class Cancel(msgspec.Struct, tag="cancel", frozen=True):
    ids: list[int]
    array: bool = False  # ids are array ids: every member not yet running
    select: JobSelection | None = None


class Release(msgspec.Struct, tag="release", frozen=True):
    ids: list[int]
    select: JobSelection | None = None


class Pause(msgspec.Struct, tag="pause", frozen=True):
    ids: list[int]
    array: bool = False
    select: JobSelection | None = None


class Resume(msgspec.Struct, tag="resume", frozen=True):
    ids: list[int]
    array: bool = False
    select: JobSelection | None = None
