"""A job's --env may not override what nvq sets for it."""

from __future__ import annotations

import pytest

from nvq.domain.validate import SpecError, validate_spec
from nvq.model import JobSpec


@pytest.mark.parametrize("name", ["CUDA_VISIBLE_DEVICES", "NVQ_JOB_ID", "NVQ_ARTIFACTS", "NVQ_X"])
def test_variables_nvq_sets_are_refused(name: str) -> None:
    with pytest.raises(SpecError) as info:
        validate_spec(JobSpec(command="true", env={name: "1"}))
    assert str(info.value) == f"--env: {name} is set by nvq for every job and cannot be overridden"


def test_other_variables_pass_including_the_device_order() -> None:
    spec = JobSpec(command="true", env={"CUDA_DEVICE_ORDER": "FASTEST_FIRST", "NVQ": "1"})
    assert validate_spec(spec) is spec
