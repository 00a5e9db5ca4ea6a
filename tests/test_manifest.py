"""manifest.toml's [job] table → JobSpec fields: every submit option, checked the way
a submission is, errors naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvq import manifest
from nvq.model import JobSpec


def test_every_submit_option_has_its_key() -> None:
    fields = manifest.parse(
        {
            "job": {
                "command": "python train.py {}",
                "name": "sweep",
                "gpus": 0,
                "vram": "1GiB",
                "memory": 512,
                "node": "box",
                "priority": 5,
                "timeout": 90,
                "env": {"A": "1"},
                "workdir": "/w",
                "tags": ["a", "b"],
                "note": "why",
                "after": "3, 4",
                "after_any": [5],
                "retries": 1,
                "cuda": "12.0",
                "array": "0-3%2",
                "email_on_success": True,
                "email_on_failure": False,
                "max_runtime": "2h",
                "no_reassign": True,
            }
        },
        "m.toml",
    )
    spec = JobSpec(**fields)
    assert (spec.vram_mb, spec.memory_mb, spec.timeout, spec.max_runtime) == (
        1024,
        512,
        90.0,
        7200.0,
    )
    assert (spec.array, spec.no_reassign, spec.after, spec.after_any) == (
        "0-3%2",
        True,
        [3, 4],
        [5],
    )
    lane = manifest.parse({"job": {"lane": "box:1"}}, "m.toml")
    assert lane == {"lane": "box:1"}


def test_a_flag_overrides_the_key_it_shares_a_field_with() -> None:
    assert manifest.PARAM_FIELDS["vram"] == "vram_mb"
    assert manifest.PARAM_FIELDS["tag"] == "tags"
    assert manifest.PARAM_FIELDS["script"] == "command"
    for param in ("array", "max_runtime", "no_reassign", "after_any"):
        assert manifest.PARAM_FIELDS[param] == param
    cli = JobSpec(command="", array="0-1", no_reassign=False)
    fields = {"array": "0-9", "no_reassign": True, "command": "x"}
    merged = manifest.merge(cli, fields, {"array"})
    assert (merged.array, merged.no_reassign, merged.command) == ("0-1", True, "x")


@pytest.mark.parametrize(
    ("job", "message"),
    [
        ({"after": "0,-3"}, "job.after: invalid job ids '0,-3': "),
        ({"after_any": [0]}, "job.after_any: job ids are positive"),
        ({"timeout": 0}, "job.timeout: invalid duration 0: must be more than 0"),
        ({"timeout": "0s"}, "job.timeout: invalid duration '0s': must be more than 0"),
        ({"max_runtime": float("nan")}, "job.max_runtime: invalid duration NaN"),
        ({"env": {"A=B": "x"}}, 'job.env: invalid variable name "A=B"'),
        ({"vram": -1}, 'job.vram: expected a size like "512MiB" or a number of MiB, got -1'),
        ({"gpus": -1}, "job.gpus: expected an integer >= 0, got -1"),
        ({"priority": 1.5}, "job.priority: expected an integer, got 1.5"),
        ({"cuda": "new"}, "job.cuda: CUDA version 'new': expected MAJOR.MINOR"),
        ({"array": "9-0"}, "job.array: '9-0': the end is before the start"),
        ({"lane": "box:0", "node": "box"}, "job.lane: a lane names its node"),
        ({"command": " "}, "job.command: no command given"),
        ({"no_reassign": "yes"}, 'job.no_reassign: expected true or false, got "yes"'),
        ({"submitter": "me"}, "job.submitter: unknown key"),
    ],
)
def test_errors_name_the_key(job: dict[str, object], message: str) -> None:
    with pytest.raises(manifest.ManifestError) as info:
        manifest.parse({"job": job}, "m.toml")
    assert str(info.value).startswith(f"m.toml: {message}"), str(info.value)
    assert "\n" not in str(info.value)


def test_load_reads_the_file(tmp_path: Path) -> None:
    path = tmp_path / "manifest.toml"
    path.write_text('[job]\ncommand = ["echo", "a b"]\nmemory = "1GiB"\n')
    assert manifest.load(path) == {"command": "echo 'a b'", "memory_mb": 1024}
