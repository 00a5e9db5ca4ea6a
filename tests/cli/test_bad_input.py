"""Bad input at the boundary, through the real CLI: control characters and oversized
text refused at submit, edit, note and in a manifest (one line, nothing stored); an
out-of-range priority named as such; and a job's escape sequences shown, not obeyed,
when `job logs` writes to a terminal."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

from tests.cluster import Nvq


def _refused(nvq: Nvq, *args: str, says: str) -> None:
    r = nvq.run(*args)
    assert r.code != 0 and "Traceback" not in r.err, (args, r.err)
    assert len(r.err.strip().splitlines()) == 1 and says in r.err, (args, r.err)


def test_control_characters_and_huge_text_are_refused(nvq: Nvq, tmp_path: Path) -> None:
    nvq.ok("queue", "drain", "local")
    _refused(nvq, "job", "submit", "--name", "a\x1b[2Jb", "--", "true",
             says="--name: 'a\\x1b[2Jb' contains a control character '\\x1b'")
    _refused(nvq, "job", "submit", "--tag", "ok", "--tag", "x" * 101, "--", "true",
             says="--tag: a tag is at most 100 characters, not 101")
    _refused(nvq, "job", "submit", "--name", "n" * 201, "--", "true",
             says="--name: a name is at most 200 characters")
    manifest = tmp_path / "manifest.toml"
    manifest.write_text('[job]\ncommand = "true"\nname = "a\\u0000b"\n')
    _refused(nvq, "job", "submit", "--manifest", str(manifest), says="NUL byte")
    assert nvq.json("job", "ls", "--all")["jobs"] == []

    job = nvq.submit("--name", "fine", "--", "true")["id"]
    _refused(nvq, "job", "note", str(job), "x" * 100_000,
             says=f"job {job}'s note is 100000 bytes; a note holds at most 65536")
    _refused(nvq, "job", "note", str(job), "a\x1b]0;x\x07", says="control character")
    _refused(nvq, "job", "edit", str(job), "--name", "\x07bell", says="control character")
    _refused(nvq, "job", "priority", str(job), "+99999999999999999999",
             says="a priority is from -9223372036854775808 to 9223372036854775807")
    shown = nvq.show(job)
    assert (shown["name"], shown["note"], shown["priority"]) == ("fine", "", 0)
    # a note keeps its lines and tabs
    nvq.ok("job", "note", str(job), "line one\n\tline two")
    assert nvq.show(job)["note"] == "line one\n\tline two"


def _logs_on_a_terminal(nvq: Nvq, *args: str) -> bytes:
    """What `nvq job logs ARGS` writes when its stdout is a terminal (a pty)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "nvq", "job", "logs", *args],
                            env=nvq.env, stdout=slave, stderr=subprocess.PIPE)
    os.close(slave)
    out = b""
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the other end closed
            break
        if not data:
            break
        out += data
    os.close(master)
    assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
    return out


def test_job_logs_shows_escape_sequences_on_a_terminal(nvq: Nvq) -> None:
    job = nvq.submit("--gpus", "0", "--", "printf", r"title\033]0;pwned\007\033[2Jend\n")["id"]
    assert nvq.wait(job)[0] == 0
    safe = _logs_on_a_terminal(nvq, str(job))
    assert b"\x1b" not in safe and b"\x07" not in safe
    assert b"title^[]0;pwned^G^[[2Jend" in safe
    raw = _logs_on_a_terminal(nvq, str(job), "--raw")
    assert b"title\x1b]0;pwned\x07\x1b[2Jend" in raw
    # not a terminal: the job's own bytes
    assert nvq.ok("job", "logs", str(job)).out == "title\x1b]0;pwned\x07\x1b[2Jend\n"
