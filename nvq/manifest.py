"""`manifest.toml`: a job described in a file, for `nvq job submit --manifest` and
`nvq project test`.

```toml
[job]
name = "train"
command = "python train.py --epochs 10"   # or a list: ["python", "train.py"]
vram = "20GiB"
gpus = 1
cuda = "13.0"
memory = "32GiB"          # host RAM: placed against, and the job's limit
timeout = "12h"
retries = 2
env = { HF_HOME = "/scratch/hf" }
workdir = "/home/me/proj"
email_on_success = false
email_on_failure = true
lane = "box406:0"
after = [12, 13]
```

Every `job submit` option has its key (`nvq.domain.validate.SUBMIT_FIELDS`): also
`node`, `note`, `priority`, `tags`, `after_any`, `array`, `max_runtime`,
`no_reassign`, `preemptible`, `quiet` and `reservation`.

`parse` turns the `[job]` table into JobSpec field values; `merge` lays the command
line over it (a flag given on the command line wins; `env` merges key by key).
"""

from __future__ import annotations

import shlex
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from nvq.domain import job_signal
from nvq.domain.validate import SUBMIT_FIELDS, SpecError, validate_spec
from nvq.errors import BadInput
from nvq.model import JobSpec
from nvq.values import duration_value, env_value, ids_value, parse_begin, show, size_value


class ManifestError(BadInput):
    """`<file>: job.<key>: <problem>`, one line."""


def _fail(source: str, key: str, problem: str) -> ManifestError:
    return ManifestError(f"{source}: job.{key}: {problem}")


def _string(v: Any, source: str, key: str) -> str:
    if not isinstance(v, str) or not v:
        raise _fail(source, key, f"expected a non-empty string, got {show(v)}")
    return v


def _boolean(v: Any, source: str, key: str) -> bool:
    if not isinstance(v, bool):
        raise _fail(source, key, f"expected true or false, got {show(v)}")
    return v


def _count(v: Any, source: str, key: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise _fail(source, key, f"expected an integer >= 0, got {show(v)}")
    return v


def _int(v: Any, source: str, key: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise _fail(source, key, f"expected an integer, got {show(v)}")
    return v


def _size(v: Any, source: str, key: str) -> int:
    try:
        return size_value(v)
    except ValueError as exc:
        raise _fail(source, key, str(exc)) from None


def _duration(v: Any, source: str, key: str) -> float:
    try:
        return duration_value(v)
    except ValueError as exc:
        raise _fail(source, key, str(exc)) from None


def _begin(v: Any, source: str, key: str) -> float:
    try:
        return parse_begin(_string(v, source, key), time.time())
    except ValueError as exc:
        raise _fail(source, key, str(exc).removeprefix("invalid --begin ")) from None


def _signal(v: Any, source: str, key: str) -> str:
    try:
        return job_signal.normal(_string(v, source, key))
    except ValueError as exc:
        raise _fail(source, key, str(exc).removeprefix("invalid --signal ")) from None


def _command(v: Any, source: str, key: str) -> str:
    if isinstance(v, list) and v and all(isinstance(x, str) for x in v):
        return v[0] if len(v) == 1 else shlex.join(v)
    return _string(v, source, key)


def _env(v: Any, source: str, key: str) -> dict[str, str]:
    try:
        return env_value(v)
    except ValueError as exc:
        raise _fail(source, key, str(exc)) from None


def _ids(v: Any, source: str, key: str) -> list[int]:
    try:
        return ids_value(v)
    except ValueError as exc:
        raise _fail(source, key, str(exc)) from None


def _strings(v: Any, source: str, key: str) -> list[str]:
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise _fail(source, key, f"expected a list of strings, got {show(v)}")
    return list(v)


_Conv = Callable[[Any, str, str], Any]


def _notify_on(v: Any, source: str, key: str) -> list[str]:
    """`"start,fail"` or `["start", "fail"]`."""
    from nvq.domain.notify_on import parse_notify_on

    text = ",".join(_strings(v, source, key)) if isinstance(v, list) else _string(v, source, key)
    try:
        return parse_notify_on(text)
    except ValueError as exc:
        raise _fail(source, key, str(exc).removeprefix("--notify-on: ")) from None

def _retries_on(v: Any, source: str, key: str) -> str:
    """`"oom,lost"` or `["oom", "lost"]`."""
    from nvq.domain.retry_policy import parse_retries_on

    text = ",".join(_strings(v, source, key)) if isinstance(v, list) else _string(v, source, key)
    try:
        return parse_retries_on(text)
    except ValueError as exc:
        raise _fail(source, key, str(exc).removeprefix("--retries-on: ")) from None


# JobSpec field → how its manifest value is read, where its type does not say
# (`_BY_TYPE`): a field added to JobSpec with a type neither names fails at import, in
# every test.
_READERS: dict[str, _Conv] = {
    "command": _command,
    "gpus": _count,
    "vram_mb": _size,
    "timeout": _duration,
    "env": _env,
    "after": _ids,
    "after_any": _ids,
    "retries": _count,
    "memory_mb": _size,
    "max_runtime": _duration,
    "retries_on": _retries_on,
    "begin_at": _begin,
    "notify_on": _notify_on,
    "signal": _signal,
}
_BY_TYPE: dict[object, _Conv] = {
    str: _string, str | None: _string, int: _int, bool: _boolean, bool | None: _boolean,
    list[str]: _strings,
}
_TYPES = {f.name: f.type for f in msgspec.structs.fields(JobSpec)}


def _reader(field: str) -> _Conv:
    read = _READERS.get(field)
    return read if read is not None else _BY_TYPE[_TYPES[field]]


# manifest key → (JobSpec field, reader): the same fields `job submit` takes.
KEYS: dict[str, tuple[str, _Conv]] = {f.key: (f.field, _reader(f.field)) for f in SUBMIT_FIELDS}
_KEY_OF = {f.field: f.key for f in SUBMIT_FIELDS}

# `job submit` parameter → the JobSpec field it sets (to know what the command line
# gave explicitly, and so overrides).
PARAM_FIELDS: dict[str, str] = {
    **{f.param: f.field for f in SUBMIT_FIELDS},
    "script": "command",
}


def parse(data: dict[str, Any], source: str) -> dict[str, Any]:
    """The `[job]` table → JobSpec field values, checked as a submission is (the
    command may come from the command line instead). Errors name the key."""
    for key in data:
        if key != "job":
            raise ManifestError(f"{source}: {key}: unknown key (a manifest has one [job] table)")
    job = data.get("job")
    if not isinstance(job, dict):
        raise ManifestError(f"{source}: job: missing (a manifest needs a [job] table)")
    out: dict[str, Any] = {}
    for key, value in job.items():
        if key not in KEYS:
            raise _fail(source, key, f"unknown key (known keys: {', '.join(KEYS)})")
        field, read = KEYS[key]
        out[field] = read(value, source, key)
    try:
        validate_spec(msgspec.structs.replace(JobSpec(command="true"), **out))
    except SpecError as exc:
        raise _fail(source, _KEY_OF.get(exc.field, exc.field), exc.problem) from None
    return out


def load(path: Path, text: str | None = None) -> dict[str, Any]:
    """Read and parse a manifest file (or `text` read from it elsewhere, e.g. stdin)."""
    source = str(path)
    if text is None:
        try:
            text = path.read_text()
        except OSError as exc:
            raise ManifestError(f"{source}: cannot read: {exc.strerror}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(f"{source}: invalid TOML: {exc}") from None
    return parse(data, source)


def merge(cli: JobSpec, fields: dict[str, Any], given: set[str]) -> JobSpec:
    """The manifest's values, then every field the command line gave explicitly."""
    values = {k: v for k, v in fields.items() if k not in given}
    if "env" in fields and "env" in given:
        values["env"] = {**fields["env"], **cli.env}
    return msgspec.structs.replace(cli, **values)
