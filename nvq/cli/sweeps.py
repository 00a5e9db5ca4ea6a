"""Arrays (sweeps) as one thing on the command line: what a submit made, every
member's result in one table, and `7[3]` for member 3 of array 7 wherever a job id
is accepted. Built on the client's per-job requests; the daemon knows no more."""

from __future__ import annotations

import csv
import io
import re
from typing import Any

import msgspec

from nvq import control as c
from nvq.cli.params import CliError
from nvq.client import Client
from nvq.domain.arrays import parse_array
from nvq.model import Job

_MEMBER_RE = re.compile(r"([0-9]+)\[([0-9]+)\]")
_ID_LIST_RE = re.compile(r"[0-9\[\],]+")


def members(client: Client, array_id: int) -> list[Job]:
    """The array's members, by index."""
    found = client.jobs(array=array_id)
    if not found:
        raise CliError(f"no array {array_id}", 1)
    return sorted(found, key=lambda j: (j.array_index or 0, j.id))


def submitted(client: Client, first: Job, array: str | None) -> c.ArraySubmitted:
    """The array a submit made. Its members take consecutive ids from the first
    (domain/arrays.expand), so they are counted from `--array`, not fetched: a
    100,000-member array's jobs would not fit in one reply."""
    array_id = first.array_id or first.id
    if array is not None:
        ids = list(range(array_id, array_id + len(parse_array(array).indices())))
    else:
        ids = [j.id for j in members(client, array_id)]
    return c.ArraySubmitted(id=array_id, ids=ids, count=len(ids))


def submitted_line(doc: c.ArraySubmitted) -> str:
    return f"submitted array {doc.id}: jobs {doc.ids[0]}–{doc.ids[-1]} ({doc.count} members)"


class MemberResult(msgspec.Struct, kw_only=True):
    """One row of `job result --array`: which member, what it was given, how it ended."""

    id: int
    index: int | None
    parameters: dict[str, Any]
    state: str
    result: Any


def results(client: Client, array_id: int) -> list[MemberResult]:
    return [
        MemberResult(
            id=job.id,
            index=job.array_index,
            parameters={"NVQ_ARRAY_INDEX": job.array_index, "command": job.command},
            state=str(job.state),
            result=client.result(job.id),
        )
        for job in members(client, array_id)
    ]


def results_csv(rows: list[MemberResult]) -> str:
    """One line a member: id, index, state, command, then each key of the results
    (a result that is not a JSON object is one `result` column)."""
    keys: list[str] = []
    for row in rows:
        for key in row.result if isinstance(row.result, dict) else ["result"]:
            if key not in keys:
                keys.append(key)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["id", "index", "state", "command", *keys])
    for row in rows:
        values = row.result if isinstance(row.result, dict) else {"result": row.result}
        cells = [_cell(values.get(key)) for key in keys]
        writer.writerow([row.id, row.index, row.state, row.parameters["command"], *cells])
    return out.getvalue().rstrip("\n")


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return msgspec.json.encode(value).decode()


def resolve_members(args: list[str]) -> list[str]:
    """`nvq job show 7[3]` → `nvq job show 27`: each `ARRAY[INDEX]` before `--` becomes
    that member's id (also inside id lists such as `--after 7[3],7[4]`)."""
    end = args.index("--") if "--" in args else len(args)
    if not args or args[0] != "job" or not any("[" in a for a in args[1:end]):
        return args
    cache: dict[int, dict[int, int]] = {}

    def member_id(match: re.Match[str]) -> str:
        array_id, index = int(match.group(1)), int(match.group(2))
        if array_id not in cache:
            cache[array_id] = {
                j.array_index: j.id for j in members(Client(), array_id) if j.array_index is not None
            }
        if index not in cache[array_id]:
            have = ", ".join(map(str, sorted(cache[array_id])))
            raise CliError(f"array {array_id} has no member {index} (indices: {have})", 2)
        return str(cache[array_id][index])

    out = list(args)
    for i in range(1, end):
        if "[" in out[i] and _ID_LIST_RE.fullmatch(out[i]):
            out[i] = _MEMBER_RE.sub(member_id, out[i])
    return out
