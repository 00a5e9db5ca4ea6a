"""Dispatch order is a sequence, not the wall clock."""

from __future__ import annotations

import msgspec


def test_queue_order_does_not_follow_the_wall_clock() -> None:
    # Submit times from a clock stepped back an hour between two submissions: the
    # later submission (higher id) still dispatches after the earlier one.
    from nvq.domain.ordering import dispatch_order
    from nvq.domain.transitions import new_job
    from nvq.model import JobSpec

    early = new_job(JobSpec(command="a"), user="u", now=10_000.0)
    late = new_job(JobSpec(command="b"), user="u", now=10_000.0 - 3600)
    early = msgspec.structs.replace(early, id=1)
    late = msgspec.structs.replace(late, id=2)
    assert [j.id for j in dispatch_order([late, early])] == [1, 2]
