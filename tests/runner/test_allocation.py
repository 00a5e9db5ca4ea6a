"""Which cards a runner inside a Slurm job may offer: what the allocation granted."""

from __future__ import annotations

import pytest

from nvq_runner.allocation import allocated_gpus


@pytest.mark.parametrize(
    ("env", "count", "granted"),
    [
        ({}, 8, None),  # not a Slurm job: every card
        ({"SLURM_JOB_ID": "7"}, 8, []),  # a Slurm job granted no GPU
        ({"SLURM_JOB_ID": "7", "SLURM_JOB_GPUS": "3"}, 8, [3]),  # no ConstrainDevices
        ({"SLURM_JOB_ID": "7", "SLURM_JOB_GPUS": "0-2,5"}, 8, [0, 1, 2, 5]),
        ({"SLURM_JOB_ID": "7", "SLURM_JOB_GPUS": "5,6"}, 2, [0, 1]),  # the cgroup hides the rest
        ({"SLURM_JOB_ID": "7", "SLURM_STEP_GPUS": "1"}, 4, [1]),
        ({"SLURM_JOB_ID": "7", "CUDA_VISIBLE_DEVICES": "2,3"}, 4, [2, 3]),
        # Slurm's own id wins over a CUDA_VISIBLE_DEVICES of UUIDs
        ({"SLURM_JOB_ID": "7", "CUDA_VISIBLE_DEVICES": "GPU-ab", "SLURM_JOB_GPUS": "1"}, 4, [1]),
        ({"SLURM_JOB_ID": "7", "CUDA_VISIBLE_DEVICES": "GPU-ab"}, 4, []),
    ],
)
def test_allocated_gpus(env: dict[str, str], count: int, granted: list[int] | None) -> None:
    assert allocated_gpus(env, count) == granted
