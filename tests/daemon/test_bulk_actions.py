"""Whose job is whose, and acting on many at once, through the real CLI with a second
OS user: `job ls` shows USER and narrows with `--user`/`--mine`; `job cancel|pause|
resume` choose jobs by user, state and tag as `scancel -u --state` does, a member's
touching only their own and a refusal changing nothing."""

from __future__ import annotations

import getpass
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cluster import Nvq, Run
from tests.members import as_user, reachable_nvq, second_user


@pytest.fixture
def lab() -> Iterator[tuple[Nvq, str]]:
    with second_user() as (user, group), reachable_nvq() as nvq:
        nvq.write_config(f'[queue]\nmembers_group = "{group}"\n')
        yield nvq, user


def _later(nvq: Nvq, *flags: str, user: str | None = None) -> int:
    """A job that waits (its --begin is an hour away), submitted as `user` (the owner
    by default)."""
    args = ("job", "submit", "--gpus", "0", "--no-snapshot", "--begin", "1h", *flags,
            "--json", "--", "true")
    r = as_user(user, nvq, *args) if user else nvq.run(*args)
    assert r.code == 0, r.err
    job_id: int = r.json()["id"]
    return job_id


def _states(nvq: Nvq, *ids: int) -> list[str]:
    return [nvq.show(i)["state"] for i in ids]


def _one_line(r: Run, code: int, says: str) -> None:
    assert r.code == code, (r.out, r.err)
    assert len(r.err.strip().splitlines()) == 1 and says in r.err, r.err


def _ids(rows: list[dict[str, Any]]) -> set[int]:
    return {row["id"] for row in rows}


def test_ls_shows_whose_job_and_a_member_cancels_only_their_own(lab: tuple[Nvq, str]) -> None:
    nvq, member = lab
    owner = getpass.getuser()
    ours = [_later(nvq, "--tag", "sweep"), _later(nvq)]
    theirs = [_later(nvq, "--tag", "sweep", user=member), _later(nvq, user=member)]

    # USER column; --mine and --user narrow the list, in the fast path and typer's.
    table = nvq.ok("job", "ls").out.splitlines()
    header = table[0].split()
    assert header[:4] == ["ID", "STATE", "NAME", "USER"], header
    users = {int(ln.split()[0]): ln.split()[3] for ln in table[1:]}
    assert users == {ours[0]: owner, ours[1]: owner, theirs[0]: member, theirs[1]: member}
    mine = as_user(member, nvq, "job", "ls", "--mine", "--json")
    assert mine.code == 0, mine.err
    assert _ids(mine.json()["jobs"]) == set(theirs)
    assert _ids(nvq.json("job", "ls", "--user", owner)["jobs"]) == set(ours)
    assert _ids(nvq.json("job", "ls", "--mine", "--state", "pending", "--state", "held")["jobs"]) == set(ours)
    _one_line(nvq.run("job", "ls", "--mine", "--user", member), 2, "not both")

    # A member's bulk cancel by state takes their own pending jobs, not the owner's.
    r = as_user(member, nvq, "job", "cancel", "--state", "pending")
    assert r.code == 0, r.err
    assert r.out.splitlines()[-1] == "2 jobs cancelled", r.out
    assert _states(nvq, *theirs) == ["cancelled", "cancelled"]
    assert _states(nvq, *ours) == ["pending", "pending"]

    # Naming another user's jobs: refused, one line, nothing changed.
    for args in (["job", "cancel", "--user", owner], ["job", "pause", "--user", owner, "--tag", "sweep"]):
        _one_line(as_user(member, nvq, *args), 1, f"only {owner} or a queue admin")
    assert _states(nvq, *ours) == ["pending", "pending"]

    # Nothing chosen at all is bad input, never "every job"; an unknown state too.
    _one_line(nvq.run("job", "cancel"), 2, "give job ids, or choose jobs with --user")
    _one_line(nvq.run("job", "cancel", "--state", "sleepy"), 2, "is not a job state")
    assert _states(nvq, *ours) == ["pending", "pending"]


def test_an_admin_acts_on_a_members_jobs_by_user_state_and_tag(lab: tuple[Nvq, str]) -> None:
    nvq, member = lab
    ours = _later(nvq, "--tag", "sweep")
    theirs = [_later(nvq, "--tag", "sweep", user=member), _later(nvq, user=member)]

    # pause by tag (every user's, for an admin), resume by user, then cancel by user
    # and state: the owner is the queue's admin.
    paused = nvq.run("job", "pause", "--tag", "sweep")
    assert paused.code == 0, paused.err
    assert paused.out.splitlines()[-1] == "2 jobs paused", paused.out
    assert _states(nvq, ours, *theirs) == ["paused", "paused", "pending"]
    doc = nvq.json("job", "resume", "--user", member)["jobs"]
    assert [j["id"] for j in doc] == [theirs[0]]
    assert _states(nvq, ours, *theirs) == ["paused", "pending", "pending"]
    r = nvq.run("job", "cancel", "--user", member, "--state", "pending")
    assert r.code == 0, r.err
    assert r.out.splitlines()[-1] == "2 jobs cancelled", r.out
    assert _states(nvq, ours, *theirs) == ["paused", "cancelled", "cancelled"]
    none = nvq.run("job", "cancel", "--user", member)
    assert none.code == 0 and none.out.strip() == "no job matched: none cancelled", none.out
    # the member's own resume of the owner's paused job by tag takes nothing of it
    r = as_user(member, nvq, "job", "resume", "--tag", "sweep")
    assert r.code == 0 and r.out.strip() == "no job matched: none back in line", (r.out, r.err)
    assert _states(nvq, ours) == ["paused"]
