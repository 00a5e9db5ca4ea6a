"""`--signal SIG@DELAY` parsing and its check beside `--timeout` (nvq.domain.job_signal)."""

from __future__ import annotations

import signal

import pytest

from nvq.domain import job_signal


@pytest.mark.parametrize(
    ("text", "stored"),
    [("USR1@5m", "USR1@300"), ("sigusr2@90", "USR2@90"), ("10@30s", "USR1@30"),
     ("TERM", "TERM@60"), (" INT @ 1m30s ", "INT@90")],
)
def test_slurm_forms_are_read(text: str, stored: str) -> None:
    assert job_signal.normal(text) == stored


@pytest.mark.parametrize(
    ("text", "problem"),
    [("USR9@5m", "not a signal name"), ("KILL@1m", "not one a job can be warned with"), ("CHLD", "not one"),
     ("999@1m", "no signal has that number"), ("USR1@soon", "the delay after @")],
)
def test_bad_forms_say_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        job_signal.parse_signal(text)


def test_the_runner_gets_a_number_and_a_delay() -> None:
    assert job_signal.number("USR1@300") == (int(signal.SIGUSR1), 300.0)
    assert job_signal.number("") == (0, 0.0)


def test_the_delay_must_be_shorter_than_the_timeout() -> None:
    assert job_signal.check("USR1@15", 20.0) is None
    assert job_signal.check("USR1@15", None) is None  # for a preemption: no timeout needed
    problem = job_signal.check("USR1@20", 20.0)
    assert problem is not None and "shorter than the timeout" in problem
