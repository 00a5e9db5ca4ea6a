"""Every check a submission gets, in one place. Pure.

`validate_spec` is the authority: the daemon runs it on every `Submit` whatever sent
it, the CLI runs it first so a mistake fails before the daemon is asked, and a
manifest is read into a JobSpec through it. It raises `SpecError` naming the
`job submit` flag; the manifest puts its own key in front of `problem` instead.

`SUBMIT_FIELDS` is the one list of what a submission can say: each JobSpec field
with its flag and its manifest key, so the command line and manifest.toml accept
the same things.
"""

from __future__ import annotations

import math
import re
from typing import NamedTuple

import msgspec

from nvq.domain import job_signal
from nvq.domain.arrays import parse_array
from nvq.domain.lanes import parse_lane
from nvq.domain.matching import parse_cuda
from nvq.domain.notify_on import parse_notify_on
from nvq.domain.retry_policy import parse_retries_on
from nvq.domain.submit_options import BY_FIELD
from nvq.errors import BadInput
from nvq.model import JobSpec
from nvq.values import MAX_INT, MIN_INT, check_id, check_seconds


class SubmitField(NamedTuple):
    field: str  # the JobSpec field
    flag: str  # the `job submit` option ("" for the command, given after --)
    param: str  # the option's parameter name in `job submit`
    key: str  # the key in manifest.toml's [job] table


# Where a manifest key is not the field's name: sizes drop their unit.
_KEY_NAMES = {"vram_mb": "vram", "memory_mb": "memory", "begin_at": "begin"}
# Set from the environment (NVQ_SUBMITTER; the submitting shell's directory, its
# variables and their snapshot), not by a flag or a manifest; `interactive` is what
# `job shell` is, not an option of it.
_NOT_SUBMITTED = frozenset(
    {"submitter", "cwd", "env_captured", "manifest_id", "subdir", "interactive", "image_manifest",
     "image_id"}
)


def _submit_field(field: str) -> SubmitField:
    if field == "command":
        return SubmitField(field, "", "command", "command")
    option = BY_FIELD.get(field)
    param = field if option is None else option.param
    return SubmitField(field, "--" + param.replace("_", "-"), param, _KEY_NAMES.get(field, field))


SUBMIT_FIELDS: tuple[SubmitField, ...] = tuple(
    _submit_field(f.name)
    for f in msgspec.structs.fields(JobSpec)
    if f.name not in _NOT_SUBMITTED
)
_BY_FIELD = {f.field: f for f in SUBMIT_FIELDS}

NO_COMMAND = "no command given: put it after --, or pass it as one string"

# Variables the runner sets for every job (which cards, which job, where its files
# are): a job's --env may not override them, or it could run on cards it was not given.
RESERVED_ENV = frozenset({"CUDA_VISIBLE_DEVICES"})
RESERVED_ENV_PREFIX = "NVQ_"


# What people type that others read (in `job ls`, the TUI, the page, a terminal): sizes
# that keep a listing a listing, and no control characters, which would move the
# reader's cursor or recolour their terminal. A note may hold lines and tabs.
MAX_NAME = 200  # characters
MAX_TAG = 100  # characters, each
MAX_TAGS = 100
MAX_NOTE = 64 * 1024  # bytes, UTF-8
_TEXT_LIMITS = {"name": MAX_NAME, "tags": MAX_TAG}


def control_character(text: str, *, lines: bool = False) -> str | None:
    """The first control character in `text` as the reader would name it (`\\x1b`), or
    None. `lines`: newlines and tabs are text (a note's)."""
    for ch in text:
        code = ord(ch)
        if code < 0x20 or 0x7F <= code < 0xA0:
            if lines and ch in "\n\t":
                continue
            return "NUL byte" if ch == "\0" else f"control character {ch!r}"
    return None


def check_note(note: str) -> str | None:
    """What is wrong with `note` (a problem in words), or None."""
    size = len(note.encode("utf-8", "surrogatepass"))
    if size > MAX_NOTE:
        return f"is {size} bytes; a note holds at most {MAX_NOTE} (64 KiB)"
    bad = control_character(note, lines=True)
    return None if bad is None else f"contains a {bad}"


def _label(spec: JobSpec, field: str) -> None:
    values = [spec.name] if field == "name" else spec.tags
    limit = _TEXT_LIMITS[field]
    for value in values:
        if len(value) > limit:
            what = "a name" if field == "name" else "a tag"
            raise SpecError(field, f"{what} is at most {limit} characters, not {len(value)}")
        bad = control_character(value)
        if bad is not None:
            raise SpecError(field, f"{value[:40]!r} contains a {bad}")


# A reference as registries and `podman save` spell one: [host[:port]/]path[:tag][@digest]
_IMAGE_REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@+-]*")
MAX_IMAGE = 255


def check_image(ref: str) -> str | None:
    """What is wrong with an image reference (in words), or None."""
    if not ref:
        return "an image reference cannot be empty"
    if len(ref) > MAX_IMAGE:
        return f"an image reference is at most {MAX_IMAGE} characters, not {len(ref)}"
    if _IMAGE_REF.fullmatch(ref) is None:
        return f"{ref[:60]!r} is not an image reference (registry/name:tag or name@sha256:…)"
    return None


class SpecError(BadInput, ValueError):
    """A submission that cannot be queued: `field` is the JobSpec field at fault,
    `problem` what is wrong with it; the message names the flag."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        flag = _BY_FIELD[field].flag if field in _BY_FIELD else field
        super().__init__(f"{flag}: {problem}" if flag else problem)


def flag_of(field: str) -> str:
    return _BY_FIELD[field].flag


def _count(spec: JobSpec, field: str) -> None:
    value = getattr(spec, field)
    if value < 0:
        raise SpecError(field, "must be 0 or more")
    if value > MAX_INT:
        raise SpecError(field, "too large")


def _seconds(spec: JobSpec, field: str) -> None:
    value = getattr(spec, field)
    if value is not None:
        problem = check_seconds(float(value))
        if problem is not None:
            raise SpecError(field, problem)


def _text(spec: JobSpec, field: str) -> None:
    """An optional string that reaches exec (a directory, a node prefix): not empty,
    no NUL byte."""
    value = getattr(spec, field)
    if value is not None and (not value or "\0" in value):
        raise SpecError(field, "must be a non-empty string without NUL bytes")


def validate_spec(spec: JobSpec) -> JobSpec:
    """`spec` if it can be queued as it is; else `SpecError` for the first problem."""
    if not spec.command.strip() and not spec.interactive:  # a shell's default: the login shell
        raise SpecError("command", NO_COMMAND)
    if spec.interactive and spec.array:
        raise SpecError("array", "an interactive session is one job, not an array")
    if "\0" in spec.command:
        raise SpecError("command", "the command contains a NUL byte")
    _label(spec, "name")
    if len(spec.tags) > MAX_TAGS:
        raise SpecError("tags", f"at most {MAX_TAGS} tags, not {len(spec.tags)}")
    _label(spec, "tags")
    problem = check_note(spec.note)
    if problem is not None:
        raise SpecError("note", problem)
    _count(spec, "gpus")
    _count(spec, "vram_mb")
    _count(spec, "memory_mb")
    _count(spec, "retries")
    if not MIN_INT <= spec.priority <= MAX_INT:
        raise SpecError("priority", f"must be from {MIN_INT} to {MAX_INT}")
    _seconds(spec, "timeout")
    _seconds(spec, "max_runtime")
    problem = job_signal.check(spec.signal, spec.timeout)
    if problem is None and spec.signal and spec.interactive:
        problem = "a terminal session is not sent one"
    if problem is not None:
        raise SpecError("signal", problem)
    if spec.begin_at is not None and not math.isfinite(spec.begin_at):
        raise SpecError("begin_at", "expected a time")
    _text(spec, "node")
    _text(spec, "workdir")
    for name, value in spec.env.items():
        if not name or "=" in name or "\0" in name:
            raise SpecError("env", f"invalid variable name {name!r}")
        if name in RESERVED_ENV or name.startswith(RESERVED_ENV_PREFIX):
            raise SpecError("env", f"{name} is set by nvq for every job and cannot be overridden")
        if "\0" in value:
            raise SpecError("env", f"the value of {name} contains a NUL byte")
    for field in ("after", "after_any"):
        for job_id in getattr(spec, field):
            problem = check_id(job_id)
            if problem is not None:
                raise SpecError(field, problem)
    if spec.cuda is not None:
        try:
            parse_cuda(spec.cuda)
        except ValueError as exc:
            raise SpecError("cuda", str(exc)) from None
    if spec.image is not None:
        problem = check_image(spec.image)
        if problem is not None:
            raise SpecError("image", problem)
    if spec.lane is not None:
        try:
            parse_lane(spec.lane)
        except ValueError as exc:
            raise SpecError("lane", str(exc)) from None
        if spec.node is not None:
            raise SpecError("lane", "a lane names its node: give a lane or a node, not both")
        if spec.gpus != 1:
            raise SpecError("lane", "a lane job runs on exactly its lane's one GPU: leave gpus at 1")
    if spec.notify_on is not None:
        try:
            parse_notify_on(",".join(map(str, spec.notify_on)))
        except ValueError as exc:
            raise SpecError("notify_on", str(exc).removeprefix("--notify-on: ")) from None
    try:
        parse_retries_on(spec.retries_on)
    except ValueError as exc:
        raise SpecError("retries_on", str(exc).removeprefix("--retries-on: ")) from None
    if spec.array is not None:
        try:
            parse_array(spec.array)
        except ValueError as exc:
            # parse_array's message names the flag and the text already.
            raise SpecError("array", str(exc).removeprefix("--array ")) from None
    if spec.reservation is not None:
        if not spec.reservation:  # `job edit --reservation ''`: out of it
            return msgspec.structs.replace(spec, reservation=None)
        if any(ch.isspace() for ch in spec.reservation) or "\0" in spec.reservation:
            raise SpecError("reservation", f"invalid name {spec.reservation!r}")
    return spec
