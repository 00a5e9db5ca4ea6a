"""`ProgressLines`, what the terminal UI and the web page read every few seconds to
show progress moving, answers only the jobs whose output the asker may read: a real
second OS user (`members_read = "metadata"`, the default) gets no line of the owner's
running job, through the same client call the TUI and the web page make."""

from __future__ import annotations

import asyncio
import json
import os
import pwd
from pathlib import Path

from nvq.client.asynchronous import AsyncClient
from tests.members import as_user, reachable_nvq, second_user

LINE = "epoch-7-of-owner-secret-run"
# The line is made by the job, not written in its command (a command is metadata).
JOB = "echo epoch-$((3+4))-of-owner-secret-run > $NVQ_STATUS_FILE; sleep 600"


def _lines(home: Path) -> dict[int, str | None]:
    async def read() -> dict[int, str | None]:
        async with AsyncClient(home, autostart=False) as client:
            return {p.id: p.progress for p in await client.progress_lines()}

    return asyncio.run(read())


def _lines_as(user: str, home: Path) -> dict[int, str | None]:
    """`_lines` in a child that took `user`'s uid, gid and groups first: to the daemon
    (SO_PEERCRED) it is that user. A fork, as this Python (under root's home) may be
    out of the user's reach for an exec."""
    who = pwd.getpwnam(user)
    groups = os.getgrouplist(who.pw_name, who.pw_gid)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        code = 1
        try:
            os.close(r)
            os.setgroups(groups)
            os.setgid(who.pw_gid)
            os.setuid(who.pw_uid)
            os.write(w, json.dumps({str(k): v for k, v in _lines(home).items()}).encode())
            code = 0
        except BaseException as exc:
            os.write(w, json.dumps({"error": repr(exc)}).encode())
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    doc = json.loads(data)
    assert os.waitstatus_to_exitcode(status) == 0, doc
    return {int(k): v for k, v in doc.items()}


def test_a_member_gets_no_progress_line_of_another_users_job() -> None:
    with second_user() as (user, group), reachable_nvq() as nvq:
        nvq.write_config(f'[queue]\nmembers_group = "{group}"\nmembers_read = "metadata"\n')
        job = nvq.submit("--gpus", "0", "--", "sh", "-c", JOB)
        nvq.wait_for(job["id"], lambda j: j["state"] == "running" and j["progress"] == LINE)
        # the owner's TUI reads the line
        assert _lines(nvq.home)[job["id"]] == LINE
        # the member sees the job (metadata) but not the line its output wrote
        listed = as_user(user, nvq, "job", "ls", "--json")
        assert listed.code == 0 and str(job["id"]) in listed.out and LINE not in listed.out
        member = _lines_as(user, nvq.home)
        assert job["id"] not in member and LINE not in json.dumps(member)
        nvq.ok("job", "cancel", str(job["id"]))
