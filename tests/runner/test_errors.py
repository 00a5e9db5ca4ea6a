"""The runner's exceptions have one root, NvqRunnerError (nvq_runner/errors.py): the
runner may not import nvq's."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import nvq_runner
from nvq_runner.errors import NvqRunnerError

# Copied alone into each job's bin directory (job_socket.py): it may import nothing
# of the package, so its one exception stays a plain one.
STANDALONE = {"nvq_runner.job_cli"}


def test_every_exception_the_runner_defines_is_an_nvq_runner_error() -> None:
    found: list[type[BaseException]] = []
    for info in pkgutil.walk_packages(nvq_runner.__path__, "nvq_runner."):
        if info.name.endswith("__main__") or info.name in STANDALONE:
            continue
        module = importlib.import_module(info.name)
        found += [
            obj for obj in vars(module).values()
            if inspect.isclass(obj) and issubclass(obj, BaseException)
            and obj.__module__ == module.__name__
        ]
    assert len(found) >= 14  # the walk reached the whole package
    outside = sorted(f"{c.__module__}.{c.__qualname__}" for c in found
                     if not issubclass(c, NvqRunnerError))
    assert outside == []
