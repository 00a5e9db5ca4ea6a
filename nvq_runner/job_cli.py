"""`nvq` inside a job: the commands a running job needs of its own queue, over
`$NVQ_SOCKET` (job_socket.py), with nothing but the standard library — a node has only
the runner's venv. It speaks the control socket's plain wire (JSON requests, each
answered with the document `--json` prints), so every answer is that JSON document,
`--json` or not, and the exit codes are the CLI's: 0 done, 1 a job ended badly or a
refusal, 2 bad input.

    nvq job show ID | result ID | ls [--state S] | wait ID... [--timeout 1h]
    nvq job cancel ID... | submit [--name N] [--gpus N] [--vram 20GiB] [--after 12,13]
        [--priority P] [--tag T] [--env K=V] [--workdir DIR] [--node N] -- COMMAND...

A job submitted from inside a job runs in its own job directory unless `--workdir`
names a directory on the node it lands on (nothing of the caller's is snapshotted)."""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import struct
import sys
from typing import Any, NoReturn

HEADER = struct.Struct(">I")
CONTINUED = 1 << 31  # protocol.CONTINUED
MAX_SUN_PATH = 100  # job_socket.MAX_SUN_PATH
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*(KiB|MiB|GiB|TiB)")
_MIB = {"KiB": 1 / 1024, "MiB": 1, "GiB": 1024, "TiB": 1024 * 1024}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(s|m|h|d)?")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
FINISHED = ("completed", "failed", "timeout", "cancelled", "lost")


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


def ask(path: str, request: dict[str, Any]) -> tuple[str, int]:
    """The `--json` text of one request's answer, and its exit code."""
    payload = json.dumps({"request": request, "want": "json"}).encode()
    try:
        sock = connect(path)
    except OSError as exc:
        raise Refused(f"cannot reach this job's queue at {path}: {exc.strerror or exc}", 1) from None
    with sock:
        sock.sendall(HEADER.pack(len(payload)) + payload)
        parts: list[bytes] = []
        while True:
            word = HEADER.unpack(_exactly(sock, HEADER.size))[0]
            parts.append(_exactly(sock, word & ~CONTINUED))
            if not word & CONTINUED:
                break
    done = json.loads(b"".join(parts))
    if done.get("error") is not None:
        raise Refused(done["error"], done.get("exit_code") or 1)
    return done.get("data") or "null", done.get("exit_code", 0)


def _exactly(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        data = sock.recv(min(n - len(out), 1 << 20))
        if not data:
            raise Refused("the queue closed the connection without an answer", 1)
        out += data
    return bytes(out)


def _size(text: str) -> int:
    m = _SIZE.fullmatch(text.strip())
    if m is None:
        raise Refused(f"--vram {text!r}: expected a size like 20GiB or 512MiB", 2)
    return max(1, int(-(-float(m.group(1)) * _MIB[m.group(2)] // 1)))


def _duration(text: str) -> float:
    m = _DURATION.fullmatch(text.strip())
    if m is None:
        raise Refused(f"--timeout {text!r}: expected a duration like 90s, 30m or 1h", 2)
    return float(m.group(1)) * _SECONDS[m.group(2) or "s"]


def _ids(values: list[str], flag: str) -> list[int]:
    out: list[int] = []
    for value in values:
        for part in value.replace(" ", "").split(","):
            if part and (not part.isdigit() or int(part) <= 0):
                raise Refused(f"{flag} {value!r}: expected job ids like 12,13", 2)
            out += [int(part)] if part else []
    return out


def _parser() -> _Parser:
    top = _Parser(prog="nvq", description=__doc__.split("\n\n")[0])
    group = top.add_subparsers(dest="group", required=True).add_parser("job")
    cmds = group.add_subparsers(dest="cmd", required=True)
    for name in ("show", "result"):
        cmds.add_parser(name).add_argument("id")
    cmds.add_parser("ls").add_argument("--state", action="append", default=[])
    wait = cmds.add_parser("wait")
    wait.add_argument("ids", nargs="+")
    wait.add_argument("--timeout")
    cmds.add_parser("cancel").add_argument("ids", nargs="+")
    sub = cmds.add_parser("submit")
    for flag in ("--name", "--vram", "--node", "--workdir"):
        sub.add_argument(flag)
    sub.add_argument("--gpus", type=int, default=1)
    sub.add_argument("--priority", type=int, default=0)
    for flag in ("--after", "--tag", "--env"):
        sub.add_argument(flag, action="append", default=[])
    sub.add_argument("command", nargs=argparse.REMAINDER)
    for p in (top, group, *cmds.choices.values()):
        p.add_argument("--json", action="store_true")
        p.add_argument("--no-tick", action="store_true", help=argparse.SUPPRESS)
    return top


def request_of(args: argparse.Namespace) -> dict[str, Any]:
    cmd = args.cmd
    if cmd in ("show", "result"):
        (job_id,) = _ids([args.id], "ID")
        return {"type": cmd, "id": job_id}
    if cmd == "ls":
        return {"type": "ls_window", "states": args.state or None}
    if cmd == "wait":
        timeout = _duration(args.timeout) if args.timeout is not None else None
        return {"type": "wait", "ids": _ids(args.ids, "ID"), "timeout": timeout}
    if cmd == "cancel":
        return {"type": "cancel", "ids": _ids(args.ids, "ID")}
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise Refused("job submit: give the command to run, after --", 2)
    env = {}
    for item in args.env:
        key, sep, val = item.partition("=")
        if not sep or not key:
            raise Refused(f"--env {item!r}: expected KEY=VALUE", 2)
        env[key] = val
    spec = {
        "command": command[0] if len(command) == 1 else " ".join(command),
        "name": args.name or "", "gpus": args.gpus, "priority": args.priority,
        "vram_mb": _size(args.vram) if args.vram else 0, "node": args.node,
        "workdir": args.workdir, "tags": args.tag, "env": env,
        "after": _ids(args.after, "--after"),
        "submitter": os.environ.get("NVQ_SUBMITTER", f"job {os.environ.get('NVQ_JOB_ID', '')}"),
    }
    return {"type": "submit", "spec": spec}


def main(argv: list[str]) -> int:
    as_json = "--json" in argv
    try:
        path = os.environ.get("NVQ_SOCKET")
        if not path:
            raise Refused("NVQ_SOCKET is not set: this nvq runs only inside a job", 2)
        request = request_of(_parser().parse_args(argv))
        text, code = ask(path, request)
    except Refused as exc:
        if as_json:
            print(json.dumps({"error": str(exc), "exit_code": exc.code}))
        else:
            print(f"nvq: {exc}", file=sys.stderr)
        return exc.code
    print(document(request, text, code))
    return code


def document(request: dict[str, Any], text: str, code: int) -> str:
    """What the CLI's `--json` prints: the daemon's answer itself (`result` comes as
    `{"id", "result"}`, nvq.control.plain.json_document), but for `wait` (`{"jobs",
    "exit_code", "still_going"}`), which the CLI builds around it."""
    if request["type"] != "wait":
        return text
    jobs = json.loads(text)
    going = [j["id"] for j in jobs if j["state"] not in FINISHED]
    doc = {"jobs": jobs, "exit_code": code, "still_going": going}
    return json.dumps(doc, indent=2, ensure_ascii=False)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
