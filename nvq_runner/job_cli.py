"""`nvq` inside a job: the CLI's commands a running job needs of its own queue, over
`$NVQ_SOCKET` (job_socket.py), with nothing but the standard library (a node has only
the runner's venv, and a member's job may not reach even that). It speaks the control
socket's plain wire (JSON requests, each answered with the document `--json` prints),
so every answer is that JSON document, `--json` or not, and the exit codes are the
CLI's: 0 done, 1 a job ended badly or a refusal, 2 bad input.

    nvq job submit [OPTIONS] -- COMMAND...     every option of the CLI's (the queue
                                               parses them with the CLI's own parser)
    nvq job show|why|logs|note|result|wait|cancel|ls ...   as the CLI takes them
    nvq queue status

`job submit` sends its words as typed: the queue parses them exactly as `nvq job
submit` outside would, and the new job runs in the same snapshot as this job, at the
directory it was typed in (`--in-place`: in that directory itself, on this node).
The other commands take the CLI's options (tests/cli/test_job_cli_parity.py holds
their lists to the CLI's), but those in NOT_INSIDE."""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import struct
import sys
import time
from collections.abc import Iterator
from typing import Any, NoReturn

HEADER = struct.Struct(">I")
CONTINUED = 1 << 31  # protocol.CONTINUED
MAX_SUN_PATH = 100  # job_socket.MAX_SUN_PATH
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(s|m|h|d)?")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
FINISHED = ("completed", "failed", "timeout", "cancelled", "lost")
# The CLI's options these commands do not take here, and why.
NOT_INSIDE = {
    ("job", "show", "--reveal"): "secrets stay hidden on the plain wire a job speaks",
    ("job", "result", "--csv"): "a spreadsheet's table; --json carries the same rows",
}


class Refused(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise Refused(message, 2)


def connect(path: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        if len(path) <= MAX_SUN_PATH:
            sock.connect(path)
            return sock
        # Too long for sockaddr_un: reach it through an open handle on its directory.
        fd = os.open(os.path.dirname(path), os.O_PATH)
        try:
            sock.connect(f"/proc/self/fd/{fd}/{os.path.basename(path)}")
        finally:
            os.close(fd)
        return sock
    except OSError:
        sock.close()
        raise


def _open(request: dict[str, Any], want: str) -> socket.socket:
    path = os.environ.get("NVQ_SOCKET") or ""
    payload = json.dumps({"request": request, "want": want}).encode()
    try:
        sock = connect(path)
    except OSError as exc:
        raise Refused(f"cannot reach this job's queue at {path}: {exc.strerror or exc}", 1) from None
    sock.sendall(HEADER.pack(len(payload)) + payload)
    return sock


def ask(request: dict[str, Any], want: str = "json") -> tuple[Any, int]:
    """One request's answer (`want="json"`: the `--json` text; "data": the data) and
    its exit code."""
    with _open(request, want) as sock:
        done = json.loads(_frame(sock))
    if done.get("error") is not None:
        raise Refused(done["error"], done.get("exit_code") or 1)
    data = done.get("data")
    return (data or "null") if want == "json" else data, done.get("exit_code", 0)


def stream(request: dict[str, Any]) -> Iterator[bytes]:
    """A streamed answer's chunks (`job logs`)."""
    # here, not at the top: binascii needs libz, which a minimal image's python lacks
    import base64

    with _open(request, "stream") as sock:
        while True:
            frame = json.loads(_frame(sock))
            if frame.get("type") == "chunk":
                yield base64.b64decode(frame["data"])
                continue
            if frame.get("error") is not None:
                raise Refused(frame["error"], frame.get("exit_code") or 1)
            return


def _frame(sock: socket.socket) -> bytes:
    parts: list[bytes] = []
    while True:
        word = HEADER.unpack(_exactly(sock, HEADER.size))[0]
        parts.append(_exactly(sock, word & ~CONTINUED))
        if not word & CONTINUED:
            return b"".join(parts)


def _exactly(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        data = sock.recv(min(n - len(out), 1 << 20))
        if not data:
            raise Refused("the queue closed the connection without an answer", 1)
        out += data
    return bytes(out)


def _duration(text: str, flag: str) -> float:
    m = _DURATION.fullmatch(text.strip())
    if m is None:
        raise Refused(f"{flag} {text!r}: expected a duration like 90s, 30m or 1h", 2)
    return float(m.group(1)) * _SECONDS[m.group(2) or "s"]


def _ids(values: list[str], flag: str) -> list[int]:
    out: list[int] = []
    for value in values:
        for part in value.replace(" ", "").split(","):
            if part and (not part.isdigit() or int(part) <= 0):
                raise Refused(f"{flag} {value!r}: expected job ids like 12,13", 2)
            out += [int(part)] if part else []
    return out


def _since(text: str | None) -> tuple[int | None, float | None]:
    """`--since`: a job id, a date (or date-time), or an age (2h)."""
    if text is None:
        return None, None
    if text.isdigit():
        return int(text), None
    import datetime as dt

    try:
        return None, dt.datetime.fromisoformat(text).timestamp()
    except ValueError:
        pass
    try:
        return None, time.time() - _duration(text, "--since")
    except Refused:
        raise Refused(f"--since {text!r}: expected a job id (1200), a date (2026-11-30), "
                      "a date-time or an age (2h)", 2) from None


def _parser() -> _Parser:
    top = _Parser(prog="nvq", description=(__doc__ or "").split("\n\n")[0])
    groups = top.add_subparsers(dest="group", required=True)
    job = groups.add_parser("job").add_subparsers(dest="cmd", required=True)
    queue = groups.add_parser("queue").add_subparsers(dest="cmd", required=True)
    status = queue.add_parser("status")
    show = job.add_parser("show")
    show.add_argument("id")
    show.add_argument("--logs", type=int, default=0)
    show.add_argument("--env", action="store_true")  # the document lists it either way
    why = job.add_parser("why")
    why.add_argument("id")
    ls = job.add_parser("ls")
    for flag in ("--active", "--held", "--all", "--mine"):
        ls.add_argument(flag, action="store_true")
    ls.add_argument("--state", action="append", default=[])
    ls.add_argument("--limit", type=int)
    ls.add_argument("--array", type=int)
    for flag in ("--since", "--user", "--tag"):
        ls.add_argument(flag)
    wait = job.add_parser("wait")
    wait.add_argument("ids", nargs="*")
    wait.add_argument("--timeout")
    wait.add_argument("--array", type=int)
    result = job.add_parser("result")
    result.add_argument("ids", nargs="*")
    result.add_argument("--set", dest="set_json")
    result.add_argument("--array", type=int)
    cancel = job.add_parser("cancel")
    cancel.add_argument("ids", nargs="*")
    cancel.add_argument("--array", action="store_true")
    cancel.add_argument("--mine", action="store_true")
    cancel.add_argument("--state", action="append", default=[])
    for flag in ("--user", "--tag"):
        cancel.add_argument(flag)
    note = job.add_parser("note")
    note.add_argument("id")
    note.add_argument("text", nargs="?")
    note.add_argument("--append")
    note.add_argument("--clear", action="store_true")
    logs = job.add_parser("logs")
    logs.add_argument("id")
    logs.add_argument("-n", "--lines", type=int, default=50)
    for flag in ("--follow", "--stdout", "--stderr", "--streams", "--setup", "--raw"):
        logs.add_argument(*(["-f"] if flag == "--follow" else []), flag, action="store_true")
    logs.add_argument("--attempt", type=int)
    for p in (top, status, show, why, ls, wait, result, cancel, note, logs):
        p.add_argument("--json", action="store_true")
        p.add_argument("--no-tick", action="store_true", help=argparse.SUPPRESS)
    return top


def run(args: argparse.Namespace) -> tuple[Any, int]:
    """The document the command prints (text already in `--json`'s form, or data to
    format), and its exit code."""
    if args.group == "queue":
        return ask({"type": "status"})
    cmd = args.cmd
    if cmd in ("show", "why"):
        (job_id,) = _ids([args.id], "ID")
        if cmd == "why":
            return ask({"type": "why", "id": job_id})
        return ask({"type": "show", "id": job_id, "logs": args.logs, "reveal": False})
    if cmd == "ls":
        if args.limit is not None and args.limit < 1:
            raise Refused(f"--limit {args.limit}: expected at least 1", 2)
        if args.all and args.limit is not None:
            raise Refused("give --all or --limit, not both", 2)
        since_id, since_time = _since(args.since)
        states = [*args.state, "held"] if args.held else args.state or None
        return ask({"type": "ls_window", "states": states, "active": args.active,
                    "user": args.user, "mine": args.mine, "tag": args.tag, "array": args.array,
                    "since_id": since_id, "since_time": since_time, "limit": args.limit,
                    "all": args.all})
    if cmd == "wait":
        return _wait(_ids(args.ids, "ID") + _members(args.array), args.timeout)
    if cmd == "cancel":
        ids = _ids(args.ids, "ID")
        chosen = {"user": args.user, "mine": args.mine, "states": args.state or None,
                  "tag": args.tag}
        if not ids and not any(chosen.values()):
            raise Refused("give job ids, or choose jobs with --user/--mine/--state/--tag", 2)
        select = chosen if any(chosen.values()) else None
        return ask({"type": "cancel", "ids": ids, "array": args.array, "select": select})
    if cmd == "note":
        if (args.text is not None) + (args.append is not None) + args.clear > 1:
            raise Refused("give one of TEXT, --append or --clear", 2)
        (job_id,) = _ids([args.id], "ID")
        return ask({"type": "note", "id": job_id, "text": args.text, "append": args.append,
                    "clear": args.clear})
    if cmd == "logs":
        return _logs(args), 0
    return _result(args)


def _members(array: int | None) -> list[int]:
    if array is None:
        return []
    page, _ = ask({"type": "ls_window", "array": array, "all": True}, "data")
    jobs = sorted(page["jobs"], key=lambda j: (j.get("array_index") or 0, j["id"]))
    if not jobs:
        raise Refused(f"no array {array}", 1)
    return [j["id"] for j in jobs]


def _wait(ids: list[int], timeout: str | None) -> tuple[Any, int]:
    """`job wait`'s document: the jobs, the exit code, and which still go."""
    if not ids:
        raise Refused("give job ids, or --array ID", 2)
    seconds = _duration(timeout, "--timeout") if timeout is not None else None
    jobs, code = ask({"type": "wait", "ids": ids, "timeout": seconds}, "data")
    going = [j["id"] for j in jobs if j["state"] not in FINISHED]
    return {"jobs": jobs, "exit_code": code, "still_going": going}, code


def _result(args: argparse.Namespace) -> tuple[Any, int]:
    ids = _ids(args.ids, "ID")
    if args.array is not None:
        if ids or args.set_json is not None:
            raise Refused("--array ID takes no job id and no --set", 2)
        page, _ = ask({"type": "ls_window", "array": args.array, "all": True}, "data")
        members = []
        for job in sorted(page["jobs"], key=lambda j: (j.get("array_index") or 0, j["id"])):
            value, _ = ask({"type": "result", "id": job["id"]}, "data")
            members.append({
                "id": job["id"], "index": job.get("array_index"),
                "parameters": {"NVQ_ARRAY_INDEX": job.get("array_index"),
                               "command": job["command"]},
                "state": job["state"], "result": value,
            })
        if not members:
            raise Refused(f"no array {args.array}", 1)
        return {"array": args.array, "members": members}, 0
    if not ids:
        raise Refused("give a job id, or --array ID", 2)
    if args.set_json is not None and len(ids) > 1:
        raise Refused("--set stores one job's result: give one id", 2)
    if len(ids) == 1:
        return ask({"type": "result", "id": ids[0], "set_json": args.set_json})
    found = [{"id": i, "result": ask({"type": "result", "id": i}, "data")[0]} for i in ids]
    return {"results": found}, 0


def _logs(args: argparse.Namespace) -> Any:
    if args.stdout + args.stderr + args.setup > 1:
        raise Refused("give one of --stdout, --stderr, --setup", 2)
    (job_id,) = _ids([args.id], "ID")
    which = ("setup" if args.setup else "stderr" if args.stderr
             else "stdout" if args.stdout else "both")
    request = {"type": "logs", "id": job_id, "lines": args.lines, "follow": args.follow,
               "stream": which, "attempt": args.attempt, "marks": args.streams}
    if not args.json:
        for data in stream(request):
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        return None
    text = b"".join(stream(request)).decode(errors="replace")
    return {"id": job_id, "stream": which, "text": text}


def submit(argv: list[str]) -> tuple[Any, int]:
    """`job submit ARGV`, parsed by the queue; `--wait` then waits here."""
    job_id = os.environ.get("NVQ_JOB_ID", "")
    if not job_id.isdigit():
        raise Refused("NVQ_JOB_ID is not set: this nvq runs only inside a job", 2)
    cwd = os.getcwd()
    top = os.path.join(os.environ.get("NVQ_JOB_DIR", ""), "work")
    rel = os.path.relpath(cwd, top) if os.environ.get("NVQ_JOB_DIR") else ".."
    subdir = None if rel == ".." or rel.startswith("../") else ("" if rel == "." else rel)
    request = {"type": "submit_from_job", "argv": argv, "id": int(job_id), "cwd": cwd,
               "subdir": subdir}
    head = argv[: argv.index("--")] if "--" in argv else argv
    if "--wait" not in head or "--dry-run" in head:
        return ask(request)
    doc, _ = ask(request, "data")
    if "ids" in doc:  # an array: `job wait`'s document
        return _wait(doc["ids"], None)
    done, code = _wait([doc["id"]], None)
    return done["jobs"][0], code


def main(argv: list[str]) -> int:
    head = argv[: argv.index("--")] if "--" in argv else argv
    as_json = "--json" in head
    try:
        if not os.environ.get("NVQ_SOCKET"):
            raise Refused("NVQ_SOCKET is not set: this nvq runs only inside a job", 2)
        if argv[:2] == ["job", "submit"]:
            doc, code = submit(argv[2:])
        else:
            args = _parser().parse_args([a for a in argv if a != "--no-tick"])
            doc, code = run(args)
    except Refused as exc:
        if as_json:
            print(json.dumps({"error": str(exc), "exit_code": exc.code}, indent=2))
        else:
            print(f"nvq: {exc}", file=sys.stderr)
        return exc.code
    if doc is not None:
        print(doc if isinstance(doc, str) else json.dumps(doc, indent=2, ensure_ascii=False))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
