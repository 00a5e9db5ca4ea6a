"""`validate_spec`, the one check every submission gets, and the one list of fields
the command line and manifest.toml share."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from nvq import manifest
from nvq.domain.validate import SUBMIT_FIELDS, SpecError, flag_of, validate_spec
from nvq.model import JobSpec


def spec(**kw: Any) -> JobSpec:
    return msgspec.structs.replace(JobSpec(command="python train.py"), **kw)


def test_a_sound_submission_passes_unchanged() -> None:
    good = spec(
        gpus=2,
        vram_mb=2048,
        timeout=3600.0,
        env={"A": "1", "B": "x=y"},
        after=[1, 2**63 - 1],
        cuda="12.4",
        array="0-9%2",
        priority=-(2**63),
        max_runtime=60,
    )
    assert validate_spec(good) is good
    assert validate_spec(spec(lane="box:0")).lane == "box:0"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"command": "  "}, "no command given: put it after --, or pass it as one string"),
        ({"command": "echo \0"}, "the command contains a NUL byte"),
        ({"gpus": -1}, "--gpus: must be 0 or more"),
        ({"vram_mb": -1}, "--vram: must be 0 or more"),
        ({"memory_mb": 2**63}, "--memory: too large"),
        ({"retries": -2}, "--retries: must be 0 or more"),
        (
            {"priority": 2**63},
            "--priority: must be from -9223372036854775808 to 9223372036854775807",
        ),
        ({"timeout": 0.0}, "--timeout: must be more than 0"),
        ({"timeout": -5.0}, "--timeout: must not be negative"),
        ({"timeout": float("nan")}, "--timeout: expected a number of seconds"),
        ({"timeout": float("inf")}, "--timeout: more than 100 years"),
        ({"max_runtime": 0.0}, "--max-runtime: must be more than 0"),
        ({"node": ""}, "--node: must be a non-empty string without NUL bytes"),
        ({"workdir": "/tmp/\0"}, "--workdir: must be a non-empty string without NUL bytes"),
        ({"env": {"": "x"}}, "--env: invalid variable name ''"),
        ({"env": {"A=B": "x"}}, "--env: invalid variable name 'A=B'"),
        ({"env": {"A\0": "x"}}, "--env: invalid variable name 'A\\x00'"),
        ({"env": {"A": "\0"}}, "--env: the value of A contains a NUL byte"),
        ({"after": [0]}, "--after: job ids are positive integers below 2**63, got 0"),
        ({"after_any": [5, -3]}, "--after-any: job ids are positive integers below 2**63, got -3"),
        ({"after": [2**63]}, "--after: job ids are positive integers below 2**63"),
        ({"cuda": "new"}, "--cuda: CUDA version 'new': expected MAJOR.MINOR, e.g. 13.0"),
        ({"lane": "box"}, "--lane: lane 'box': expected NODE:GPU, e.g. box406:0"),
        ({"lane": "box:0", "node": "box"}, "--lane: a lane names its node"),
        ({"lane": "box:0", "gpus": 2}, "--lane: a lane job runs on exactly its lane's one GPU"),
        ({"array": "9-0"}, "--array: '9-0': the end is before the start"),
        ({"array": "x"}, "--array: 'x': expected START-END[:STEP][%MAX_RUNNING]"),
        ({"notify_on": ["end", "never"]}, "--notify-on: 'never' is not one of start, end"),
        ({"notify_on": []}, "--notify-on: give one or more of start, end"),
    ],
)
def test_each_problem_is_one_line_naming_the_flag(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError) as info:
        validate_spec(spec(**changes))
    assert str(info.value).startswith(message), str(info.value)
    assert "\n" not in str(info.value)
    assert isinstance(info.value, ValueError)
    assert info.value.field in changes


def test_every_submit_field_has_a_flag_and_a_manifest_key() -> None:
    # who submitted, and what the CLI takes from where it was typed, are no flags;
    # nor is being a terminal session (`job shell` is one)
    # nor the staged image the CLI found for `--image` (`image_manifest`, `image_id`)
    taken = {
        "submitter", "cwd", "env_captured", "manifest_id", "subdir", "interactive",
        "image_manifest", "image_id",
    }
    fields = {f.name for f in msgspec.structs.fields(JobSpec)} - taken
    assert {f.field for f in SUBMIT_FIELDS} == fields
    assert {field for field, _ in manifest.KEYS.values()} == fields
    assert flag_of("vram_mb") == "--vram" and flag_of("tags") == "--tag"
    assert flag_of("after_any") == "--after-any" and flag_of("command") == ""


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"name": "a\x1b[31mred"}, "--name: 'a\\x1b[31mred' contains a control character"),
        ({"name": "a\0b"}, "--name: 'a\\x00b' contains a NUL byte"),
        ({"name": "x" * 201}, "--name: a name is at most 200 characters, not 201"),
        ({"tags": ["ok", "t\u009bx"]}, "--tag: 't\\x9bx' contains a control character"),
        ({"tags": ["t" * 101]}, "--tag: a tag is at most 100 characters"),
        ({"tags": [str(i) for i in range(101)]}, "--tag: at most 100 tags, not 101"),
        ({"note": "n" * (64 * 1024 + 1)}, "--note: is 65537 bytes; a note holds at most 65536"),
        ({"note": "bell\x07"}, "--note: contains a control character '\\x07'"),
    ],
)
def test_text_people_read_is_bounded_and_has_no_control_characters(
    change: dict[str, object], says: str
) -> None:
    spec = msgspec.structs.replace(JobSpec(command="true"), **change)
    with pytest.raises(SpecError) as info:
        validate_spec(spec)
    assert str(info.value).startswith(says), str(info.value)


def test_a_note_keeps_lines_and_tabs_and_the_limits_are_inclusive() -> None:
    ok = JobSpec(command="true", name="n" * 200, tags=["t" * 100] * 100,
                 note="line\n\tindented " + "é" * 30_000)
    assert validate_spec(ok) is ok
