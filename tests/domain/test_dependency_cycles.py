"""No cycle of prerequisites can be stored (jobs that wait on each other wait for ever):
`cycle_closed_by` against a brute-force reachability, on random graphs."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nvq.domain import deps, transitions
from nvq.domain.transitions import TransitionError
from nvq.model import JobRecord, JobSpec, JobState

JOBS = range(1, 9)
graphs = st.dictionaries(
    st.sampled_from(JOBS), st.lists(st.sampled_from(JOBS), max_size=3, unique=True), max_size=8
)


def _reaches(graph: dict[int, list[int]], start: int, goal: int) -> bool:
    seen, todo = set(), [start]
    while todo:
        node = todo.pop()
        if node == goal:
            return True
        if node not in seen:
            seen.add(node)
            todo += graph.get(node, [])
    return False


@given(graphs, st.sampled_from(JOBS), st.lists(st.sampled_from(JOBS), min_size=1, max_size=3))
def test_a_cycle_is_found_exactly_when_one_closes(
    graph: dict[int, list[int]], job: int, adding: list[int]
) -> None:
    cycle = deps.cycle_closed_by(job, adding, lambda j: graph.get(j, []))
    assert (cycle is not None) == any(_reaches(graph, a, job) for a in adding)
    if cycle is not None:
        # a real path: starts and ends at the job, first step is an added edge, every
        # other step an existing one
        assert cycle[0] == cycle[-1] == job and cycle[1] in adding
        for a, b in itertools.pairwise(cycle[1:]):
            assert b in graph.get(a, [])


def test_the_refusal_names_the_cycle() -> None:
    graph = {18: [17], 17: [16]}
    job = JobRecord(id=16, state=JobState.PENDING, user="u", created_at=0.0,
                    spec=JobSpec(command="true", name="a", submitter="u"))
    with pytest.raises(TransitionError) as info:
        transitions.edit_after(job, drop=[], add=[18], by="u", waits_for=lambda j: graph.get(j, []))
    assert str(info.value) == "job 16 would wait for itself: 16 → 18 → 17 → 16"


def test_a_long_chain_is_walked_without_recursion() -> None:
    chain = {i: [i - 1] for i in range(2, 200_001)}
    assert deps.cycle_closed_by(1, [200_000], lambda j: chain.get(j, [])) is not None
