"""The selectors of the bulk actions (`job cancel|pause|resume|release --user NAME
--mine --state S --tag T`, as `scancel -u NAME --state=S`): the options each of those
commands declares, the request's `JobSelection` they make, and the closing count."""

from __future__ import annotations

from collections.abc import Sequence

import typer

from nvq import control as c
from nvq.cli.params import CliError
from nvq.model import Job

UserOpt = typer.Option(
    None, "--user", help="Only this user's jobs (another user's: a queue admin's only)."
)
MineOpt = typer.Option(False, "--mine", help="Only your own jobs.")
StateOpt = typer.Option([], "--state", help="Only jobs in this state (repeatable).")
TagOpt = typer.Option(None, "--tag", help="Only jobs with this tag.")


def selection(
    ids: list[int] | None, *, user: str | None, mine: bool, states: list[str], tag: str | None
) -> c.JobSelection | None:
    """The selection the options make (None when none is given); ids or a selector
    must be given, so that a bare `job cancel` never means every job."""
    if user is not None and mine:
        raise CliError("give --user NAME or --mine, not both", 2)
    if user is None and not mine and not states and tag is None:
        if not ids:
            raise CliError("give job ids, or choose jobs with --user, --mine, --state or --tag", 2)
        return None
    return c.JobSelection(user=user, mine=mine, states=list(states) or None, tag=tag)


def counted(jobs: Sequence[Job], done: str, said: list[str] | None = None) -> str:
    """A bulk action's line per job (`said`, else `job 7 cancelled`) and how many it
    changed: `3 jobs cancelled`."""
    n = len(jobs)
    if n == 0:
        return f"no job matched: none {done}"
    said = said if said is not None else [f"job {j.id} {done}" for j in jobs]
    return "\n".join([*said, f"{n} job{'s' if n != 1 else ''} {done}"])
