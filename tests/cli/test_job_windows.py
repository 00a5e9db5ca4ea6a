"""`nvq job ls` is a window on a long history: the live jobs and the newest 50 finished
by default, `--limit`, `--all`, `--since`, `--state`, `--user`, `--tag`, `--array`;
`--json` is always `{"jobs": [...], "more": bool}`, `more` saying the window cut it.
A finished job has left the daemon's memory, yet is still shown, waited on and
requeued, after others finish and after a daemon restart."""

from __future__ import annotations

import getpass
import json

from tests.cluster import Nvq

LEFT_OUT = "(older jobs not shown: --all for every job, --limit N or --since ID|DATE)"


def _history(nvq: Nvq) -> tuple[int, list[int], int]:
    """A tagged single job, then a 55-member array, then another single: 57 finished."""
    first = nvq.submit("--gpus", "0", "--tag", "early", "--", "true")["id"]
    members = nvq.ok(
        "job", "submit", "--gpus", "0", "--array", "0-54", "--json", "--", "true"
    ).json()["ids"]
    last = nvq.submit("--gpus", "0", "--", "true")["id"]
    code, _ = nvq.wait(first, *members, last)
    assert code == 0
    return first, members, last


def _ids(doc: dict[str, object]) -> list[int]:
    rows = doc["jobs"]
    assert isinstance(rows, list)
    return [int(j["id"]) for j in rows]


def test_the_default_window_is_live_jobs_and_the_newest_50_finished(nvq: Nvq) -> None:
    first, members, last = _history(nvq)
    every = [first, *members, last]
    blocker = nvq.submit("--gpus", "0", "--", "sleep", "60")["id"]
    waiting = nvq.submit("--gpus", "0", "--after", str(blocker), "--", "true")["id"]

    doc = nvq.json("job", "ls")
    assert doc["more"] is True
    assert _ids(doc) == [*every[-50:], blocker, waiting]
    text = nvq.ok("job", "ls").out.splitlines()
    assert text[-1] == LEFT_OUT
    assert not any(line.split()[0] == str(first) for line in text[1:-1])

    # --all: every job, and the plain list scripts always read
    assert _ids(nvq.json("job", "ls", "--all")) == [*every, blocker, waiting]
    assert LEFT_OUT not in nvq.ok("job", "ls", "--all").out

    # --limit N: the newest N of any state
    doc = nvq.json("job", "ls", "--limit", "3")
    assert doc["more"] is True and _ids(doc) == [last, blocker, waiting]
    nvq.ok("job", "cancel", str(blocker))


def test_filters_narrow_the_window(nvq: Nvq) -> None:
    first, members, last = _history(nvq)
    # under the window: nothing cut
    assert _ids(nvq.json("job", "ls", "--tag", "early")) == [first]
    assert _ids(nvq.json("job", "ls", "--since", str(members[-3]))) == [*members[-3:], last]
    assert nvq.json("job", "ls", "--user", "nobody-here") == {"jobs": [], "more": False}
    assert nvq.json("job", "ls", "--state", "failed") == {"jobs": [], "more": False}
    # over it: newest first, and said so
    doc = nvq.json("job", "ls", "--array", str(members[0]))
    assert doc["more"] is True and _ids(doc) == members[-50:]
    assert _ids(nvq.json("job", "ls", "--array", str(members[0]), "--all")) == members
    mine = nvq.json("job", "ls", "--user", getpass.getuser(), "--state", "completed", "--all")
    assert _ids(mine) == [first, *members, last]
    assert _ids(nvq.json("job", "ls", "--since", "1h", "--limit", "2")) == [members[-1], last]


def test_active_is_the_live_jobs_narrowed_as_any_window(nvq: Nvq) -> None:
    done = nvq.submit("--gpus", "0", "--tag", "t", "--", "true")["id"]
    nvq.wait(done)
    blocker = nvq.submit("--gpus", "0", "--tag", "t", "--", "sleep", "600")["id"]
    waiting = nvq.submit("--gpus", "0", "--after", str(blocker), "--", "true")["id"]
    assert nvq.json("job", "ls", "--active") == nvq.json("job", "ls", "--active", "--all")
    assert _ids(nvq.json("job", "ls", "--active")) == [blocker, waiting]
    # every filter narrows it (they were once ignored beside --active)
    assert _ids(nvq.json("job", "ls", "--active", "--tag", "t")) == [blocker]
    empty = {"jobs": [], "more": False}
    assert nvq.json("job", "ls", "--active", "--user", "nobody-here") == empty
    assert nvq.json("job", "ls", "--active", "--state", "completed") == empty
    assert nvq.json("job", "ls", "--active", "--since", str(waiting)) == {
        "jobs": nvq.json("job", "ls", "--since", str(waiting))["jobs"], "more": False}
    doc = nvq.json("job", "ls", "--active", "--limit", "1")
    assert doc["more"] is True and _ids(doc) == [waiting]
    nvq.ok("job", "cancel", str(blocker))


def test_bad_window_flags_are_one_line_and_change_nothing(nvq: Nvq) -> None:
    job = nvq.submit("--gpus", "0", "--", "true")["id"]
    nvq.wait(job)
    for args, words in [
        (["--since", "last tuesday"], "--since 'last tuesday': expected a job id"),
        (["--limit", "0"], "--limit 0: expected at least 1"),
        (["--all", "--limit", "5"], "give --all or --limit, not both"),
        (["--state", "bogus"], "--state 'bogus' is not a job state; states are pending, held,"),
        (["--array", "99999"], "no array with id 99999"),
    ]:
        r = nvq.run("job", "ls", *args)
        assert r.code == 2 and r.out == ""
        assert r.err.startswith("nvq: ") and words in r.err and r.err.count("\n") == 1
        doc = json.loads(nvq.run("job", "ls", *args, "--json").out)
        assert words in doc["error"]
    assert _ids(nvq.json("job", "ls")) == [job]


def test_a_finished_job_is_still_there_after_others_finish_and_a_restart(nvq: Nvq) -> None:
    first, members, _ = _history(nvq)
    nvq.ok("daemon", "stop")
    # the next command starts a daemon that loads only live jobs
    shown = nvq.show(first)
    assert shown["state"] == "completed" and shown["tags"] == ["early"]
    assert [e["kind"] for e in shown["events"]][-1] == "job_completed"
    code, jobs = nvq.wait(first, members[0])
    assert code == 0 and [j["state"] for j in jobs] == ["completed", "completed"]
    nvq.ok("job", "result", str(first), "--set", '{"loss": 0.5}')
    assert nvq.json("job", "result", str(first)) == {"id": first, "result": {"loss": 0.5}}
    nvq.ok("job", "requeue", str(first))
    code, (again,) = nvq.wait(first)
    assert code == 0 and again["state"] == "completed" and again["attempt"] == 2


def test_queue_status_sums_up_an_array_in_one_line(nvq: Nvq) -> None:
    blocker = nvq.submit("--gpus", "0", "--", "sleep", "60")["id"]
    array = nvq.ok(
        "job",
        "submit",
        "--gpus",
        "0",
        "--array",
        "0-19",
        "--after",
        str(blocker),
        "--json",
        "--",
        "true",
    ).json()
    text = nvq.ok("queue", "status").out
    assert f"array {array['id']}: 20 pending, 0 running, 0 failed" in text.splitlines()
    assert not any(line.split()[:1] == [str(array["ids"][5])] for line in text.splitlines())
    doc = nvq.json("queue", "status")
    (summary,) = doc["arrays"]
    assert summary["id"] == array["id"] and summary["counts"]["pending"] == 20
    assert [j["id"] for j in doc["jobs"]] == [blocker]
    nvq.ok("job", "cancel", "--array", str(array["id"]))
    nvq.ok("job", "cancel", str(blocker))


def test_queue_events_streams_a_long_log_page_by_page(nvq: Nvq) -> None:
    blocker = nvq.submit("--gpus", "0", "--", "sleep", "60")["id"]
    nvq.ok(
        "job", "submit", "--gpus", "0", "--array", "0-2099", "--after", str(blocker), "--", "true"
    )
    events = nvq.json("queue", "events")["events"]  # more than one page (2,000), one list
    ids = [e["id"] for e in events]
    assert len(ids) > 2100 and ids == sorted(set(ids)) and ids[0] == 1
    assert [e["id"] for e in nvq.json("queue", "events", "--limit", "2050")["events"]] == ids[:2050]
    later = nvq.json("queue", "events", "--since", str(ids[1990]), "--limit", "30")["events"]
    assert [e["id"] for e in later] == ids[1991:2021]
    lines = nvq.ok("queue", "events").out.splitlines()
    assert lines[0].split() == ["ID", "TIME", "KIND", "JOB", "NODE", "DATA"]
    assert len(lines) == len(ids) + 1  # the header, then a line per event
    assert lines[-1].split()[0] == str(ids[-1])
    nvq.ok("job", "cancel", str(blocker))
