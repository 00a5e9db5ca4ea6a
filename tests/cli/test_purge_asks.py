"""`nvq job purge` deletes jobs and their artifacts: it says what it would delete and
asks on a terminal; `--yes` skips the question, `--dry-run` only prints, and with no
terminal and no `--yes` it refuses."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.cluster import Nvq


def _finished(nvq: Nvq, n: int) -> list[int]:
    ids = [nvq.submit("--gpus", "0", "--", "true")["id"] for _ in range(n)]
    code, _ = nvq.wait(*ids)
    assert code == 0
    return ids


def _on_a_terminal(nvq: Nvq, answer: str) -> tuple[int, str]:
    """`nvq job purge` with a pseudo-terminal as stdin; `answer` typed at the prompt."""
    leader, follower = os.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "nvq", "job", "purge"],
            env=nvq.env,
            stdin=follower,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        os.write(leader, answer.encode())
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(leader)
        os.close(follower)
    return proc.returncode, out + err


def test_dry_run_prints_what_would_go_and_deletes_nothing(nvq: Nvq) -> None:
    ids = _finished(nvq, 3)
    r = nvq.ok("job", "purge", "--dry-run")
    assert r.out.strip() == f"would purge 3 finished jobs and their artifacts: {ids[0]}-{ids[2]}"
    assert nvq.json("job", "purge", "--dry-run") == {"would_purge": 3, "ids": ids}
    assert [j["id"] for j in nvq.json("job", "ls")["jobs"]] == ids


def test_without_a_terminal_it_refuses_unless_told_yes(nvq: Nvq) -> None:
    ids = _finished(nvq, 2)
    r = nvq.run("job", "purge", input="")
    assert r.code == 2
    assert r.err == (
        f"nvq: would purge 2 finished jobs and their artifacts: {ids[0]}-{ids[1]}; "
        "not a terminal, so not asking: give --yes\n"
    )
    assert len(nvq.json("job", "ls")["jobs"]) == 2
    assert nvq.json("job", "purge", "--yes")["ids"] == ids
    assert nvq.json("job", "ls")["jobs"] == []
    # nothing to purge: nothing to ask
    assert nvq.run("job", "purge", input="").out == "purged 0 finished jobs\n"


def test_on_a_terminal_it_asks(nvq: Nvq) -> None:
    ids = _finished(nvq, 1)
    code, text = _on_a_terminal(nvq, "n\n")
    assert code == 1 and "Delete them?" in text and "nothing purged" in text
    assert f"would purge 1 finished jobs and their artifacts: {ids[0]}" in text
    assert len(nvq.json("job", "ls")["jobs"]) == 1
    code, text = _on_a_terminal(nvq, "y\n")
    assert code == 0 and "purged 1 finished jobs" in text
    assert nvq.json("job", "ls")["jobs"] == []
