"""`job purge` as its help says, through the real CLI with a second OS user: a member
forgets their own finished jobs, an admin (the queue's owner, or a user in `[queue]
admins`) everyone's."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cluster import Nvq
from tests.members import as_user, reachable_nvq, second_user


@pytest.fixture
def lab() -> Iterator[tuple[Nvq, str, str]]:
    with second_user() as (user, group), reachable_nvq() as nvq:
        nvq.write_config(f'[queue]\nmembers_group = "{group}"\n')
        yield nvq, user, group


def _finished(nvq: Nvq, user: str | None = None) -> int:
    args = ("job", "submit", "--gpus", "0", "--no-snapshot", "--json", "--", "true")
    r = as_user(user, nvq, *args) if user else nvq.run(*args)
    assert r.code == 0, r.err
    job_id: int = r.json()["id"]
    code, _ = nvq.wait(job_id)
    assert code == 0
    return job_id


def _listed(nvq: Nvq) -> set[int]:
    return {j["id"] for j in nvq.json("job", "ls", "--all")["jobs"]}


def test_a_member_purges_their_own_and_an_admin_everyones(lab: tuple[Nvq, str, str]) -> None:
    nvq, member, group = lab
    ours, theirs = _finished(nvq), _finished(nvq, member)

    # A member: their own finished jobs only, and the plan says so first.
    plan = as_user(member, nvq, "job", "purge", "--dry-run", "--json")
    assert plan.code == 0, plan.err
    assert plan.json() == {"would_purge": 1, "ids": [theirs]}
    r = as_user(member, nvq, "job", "purge", "--yes", "--json")
    assert r.code == 0, r.err
    assert r.json()["ids"] == [theirs]
    assert _listed(nvq) == {ours}

    # The queue's owner, though not listed in [queue] admins: everyone's.
    theirs = _finished(nvq, member)
    assert nvq.json("job", "purge", "--yes")["ids"] == [ours, theirs]
    assert _listed(nvq) == set()

    # A member made an admin: everyone's too.
    nvq.write_config(f'[queue]\nmembers_group = "{group}"\nadmins = ["{member}"]\n')
    nvq.ok("daemon", "reload")
    ours, theirs = _finished(nvq), _finished(nvq, member)
    r = as_user(member, nvq, "job", "purge", "--yes")
    assert r.code == 0, r.err
    assert r.out.strip() == "purged 2 finished jobs"
    assert _listed(nvq) == set()
