"""One tree of exceptions (nvq.errors): every class nvq defines hangs under NvqError,
in the UserError branch (shown as is, with its exit status) or the Internal one, and
the daemon answers a request's UserError as a refusal with that status."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import nvq
from nvq.daemon.core.errors import BadRequest, RequestError, map_exceptions
from nvq.daemon.handlers.subscribe import FellBehind
from nvq.domain.lanes import LaneError
from nvq.domain.transitions import TransitionError
from nvq.domain.validate import SpecError
from nvq.errors import BadInput, Internal, NvqError, UserError
from nvq.store.core import StoreError


def _defined_in_nvq() -> list[type[BaseException]]:
    found: list[type[BaseException]] = []
    for info in pkgutil.walk_packages(nvq.__path__, "nvq."):
        if info.name.endswith("__main__"):
            continue  # running the CLI is all it does
        module = importlib.import_module(info.name)
        found += [
            obj for obj in vars(module).values()
            if inspect.isclass(obj) and issubclass(obj, BaseException)
            and obj.__module__ == module.__name__
        ]
    return found


def test_every_exception_nvq_defines_is_an_nvq_error_of_one_branch() -> None:
    classes = _defined_in_nvq()
    assert len(classes) >= 40  # the walk reached the whole tree
    outside = sorted(f"{c.__module__}.{c.__qualname__}" for c in classes
                     if not issubclass(c, NvqError))
    assert outside == []
    branchless = sorted(f"{c.__module__}.{c.__qualname__}" for c in classes
                        if c not in (NvqError, UserError, Internal)
                        and issubclass(c, UserError) == issubclass(c, Internal))
    assert branchless == []


def test_exit_statuses_of_the_branches() -> None:
    assert (UserError.exit_code, BadInput.exit_code) == (1, 2)
    assert (RequestError.exit_code, BadRequest.exit_code) == (1, 2)
    assert issubclass(BadRequest, BadInput)


def _mapped(exc: Exception) -> BaseException:
    with pytest.raises(Exception) as raised, map_exceptions():
        raise exc
    return raised.value


def test_the_daemon_answers_the_user_branch_as_a_refusal() -> None:
    # the domain's refusals, as they were answered before the tree: message as is, exit 1
    for refusal in (TransitionError("job 3 is running"), LaneError("no lane x")):
        got = _mapped(refusal)
        assert type(got) is RequestError and str(got) == str(refusal)
    bad = _mapped(SpecError("gpus", "must be at least 1"))
    assert type(bad) is BadRequest and bad.exit_code == 2


def test_a_request_error_keeps_its_own_class() -> None:
    behind = FellBehind(7)
    assert _mapped(behind) is behind
    refused = BadRequest("no such node")
    assert _mapped(refused) is refused


def test_an_internal_error_stays_internal() -> None:
    broken = StoreError("disk gone")
    assert _mapped(broken) is broken
    stray = ValueError("a bug")
    assert _mapped(stray) is stray
