"""Bad input: one clear line on stderr (or a JSON error document), a non-zero exit, and
nothing changed."""

from __future__ import annotations

import json

import pytest

from tests.cluster import Nvq


def _assert_one_line_error(nvq: Nvq, *args: str, contains: str) -> None:
    r = nvq.run(*args)
    assert r.code != 0, f"nvq {args} succeeded"
    lines = r.err.strip().splitlines()
    assert len(lines) == 1, f"not one line: {r.err!r}"
    assert contains in lines[0], lines[0]
    assert r.out == ""
    i = args.index("--") if "--" in args else len(args)
    j = nvq.run(*args[:i], "--json", *args[i:])
    assert j.code == r.code
    doc = json.loads(j.out)
    assert contains in doc["error"]


@pytest.mark.parametrize(
    ("args", "contains"),
    [
        (("job", "show", "999"), "no job with id 999"),
        (("job", "cancel", "999"), "no job with id 999"),
        (("job", "submit", "--vram", "banana", "--", "true"), "banana"),
        (("job", "submit", "--vram", "20GB", "--", "true"), "20GB"),
        (("job", "submit", "--timeout", "soon", "--", "true"), "soon"),
        (("job", "submit", "--env", "NOEQUALS", "--", "true"), "KEY=VALUE"),
        (("job", "submit", "--name", "x"), "no command"),
        (("job", "submit", "--gpus", "-1", "--", "true"), "--gpus"),
        (("job", "show", "abc"), "integer"),
        (("job", "result", "1", "--set", "{not json"), "no job with id 1"),
        (("job", "frobnicate"), "frobnicate"),
    ],
)
def test_bad_input_is_one_line_and_changes_nothing(
    nvq: Nvq, args: tuple[str, ...], contains: str
) -> None:
    _assert_one_line_error(nvq, *args, contains=contains)
    assert nvq.json("job", "ls")["jobs"] == []


def test_bad_result_json_is_refused(nvq: Nvq) -> None:
    job = nvq.submit("--", "true")
    nvq.wait(job["id"])
    _assert_one_line_error(
        nvq, "job", "result", str(job["id"]), "--set", "{nope", contains="not valid JSON"
    )
    assert nvq.json("job", "result", str(job["id"]))["result"] is None


def test_malformed_config_names_file_and_key(nvq: Nvq) -> None:
    nvq.write_config('[queue]\nheadroom = "lots"\n')
    r = nvq.run("job", "ls")
    assert r.code != 0
    (line,) = r.err.strip().splitlines()
    assert "config.toml" in line and "headroom" in line
    assert not (nvq.home / "queue.db").exists()


def test_missing_script_file(nvq: Nvq) -> None:
    _assert_one_line_error(
        nvq, "job", "submit", "--script", "/nonexistent/x.sh", contains="/nonexistent/x.sh"
    )


def test_script_file_is_the_command(nvq: Nvq, tmp_path) -> None:  # type: ignore[no-untyped-def]
    script = tmp_path / "job.sh"
    script.write_text("set -e\necho from-script\nexit 0\n")
    job = nvq.submit("--script", str(script))
    code, (_done,) = nvq.wait(job["id"])
    assert code == 0
    assert nvq.run("job", "logs", str(job["id"])).out == "from-script\n"


def test_every_command_prints_json(nvq: Nvq) -> None:
    job = nvq.submit("--", "true")
    nvq.wait(job["id"])
    for args in (
        ("job", "ls"),
        ("job", "ls", "--active"),
        ("job", "show", str(job["id"])),
        ("job", "logs", str(job["id"])),
        ("job", "wait", str(job["id"])),
        ("job", "note", str(job["id"]), "hi"),
        ("job", "result", str(job["id"])),
        ("queue", "status"),
        ("queue", "nodes"),
        ("queue", "events"),
    ):
        r = nvq.run(*args, "--json")
        assert r.code == 0, (args, r.err)
        json.loads(r.out)


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        (
            ("--cuda", "thirteen", "--array", "0-3"),
            "nvq: --cuda: CUDA version 'thirteen': expected MAJOR.MINOR, e.g. 13.0",
        ),
        (("--cuda", "13.0", "--array", "x"), "nvq: --array: 'x': expected START-END"),
        (("--retries", "-1"), "nvq: --retries: must be 0 or more"),
        (("--gpus", "-1"), "nvq: --gpus: must be 0 or more"),
        (("--env", "NVQ_X=1"), "nvq: --env: NVQ_X is set by nvq for every job"),
        (("--memory", "lots"), "nvq: --memory: "),
        (("--after", "3,x"), "nvq: --after '3,x': expected job ids like 12,13"),
    ],
)
def test_a_bad_flag_is_named_before_the_daemon_is_asked(
    nvq: Nvq, flags: tuple[str, ...], line: str
) -> None:
    r = nvq.run("job", "submit", *flags, "--", "true")
    assert r.code == 2
    assert r.err.startswith(line), r.err
    assert not (nvq.home / "daemon.sock").exists()
