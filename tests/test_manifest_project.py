"""`job submit --manifest` and `project test` through the real CLI."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.cluster import Nvq

PY = sys.executable

MANIFEST = """
[job]
name = "from-manifest"
command = ["sh", "-c", "echo $GREETING > {out}"]
vram = "2GiB"
gpus = 1
cuda = "12.0"
memory = "1GiB"
timeout = "10m"
retries = 2
env = {{ GREETING = "hello", OTHER = "x" }}
workdir = "{workdir}"
email_on_success = false
email_on_failure = true
after = []
"""


def test_submit_from_a_manifest_with_flags_overriding(nvq: Nvq, tmp_path: Path) -> None:
    out = tmp_path / "greeting.txt"
    manifest = tmp_path / "manifest.toml"
    manifest.write_text(MANIFEST.format(out=out, workdir=tmp_path))
    # email_on_failure needs a mail channel (never reached here: the job completes).
    nvq.write_config('[notify.email]\nhost = "127.0.0.1"\nport = 9\nfrom = "nvq@lab"\n')
    job = nvq.submit("--manifest", str(manifest), "--name", "override", "--env", "OTHER=y")
    assert job["name"] == "override"
    assert job["vram_mb"] == 2048 and job["gpus_requested"] == 1
    assert job["cuda"] == "12.0" and job["memory_mb"] == 1024 and job["retries"] == 2
    assert job["timeout"] == 600 and job["workdir"] == str(tmp_path)
    assert job["env"] == {"GREETING": "hello", "OTHER": "y"}
    assert job["email_on_failure"] is True and job["email_on_success"] is False
    code, _ = nvq.wait(job["id"])
    assert code == 0 and out.read_text() == "hello\n"

    # A command on the command line replaces the manifest's.
    other = nvq.submit("--manifest", str(manifest), "--gpus", "0", "--", "true")
    assert other["command"] == "true" and other["gpus_requested"] == 0


def test_a_manifest_takes_every_submit_option(nvq: Nvq, tmp_path: Path) -> None:
    manifest = tmp_path / "manifest.toml"
    manifest.write_text(
        "[job]\n"
        'command = "echo {}"\n'
        'array = "0-1"\n'
        "no_reassign = true\n"
        'max_runtime = "1h"\n'
        "priority = 3\n"
        'tags = ["sweep"]\n'
        'note = "from a file"\n'
    )
    nvq.submit("--manifest", str(manifest))
    jobs = nvq.json("job", "ls")["jobs"]
    assert sorted(j["array_index"] for j in jobs) == [0, 1]
    for j in jobs:
        assert j["no_reassign"] is True and j["max_runtime"] == 3600
        assert j["priority"] == 3 and j["tags"] == ["sweep"] and j["note"] == "from a file"

def test_manifest_errors_name_the_key_and_change_nothing(nvq: Nvq, tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    for text, expected in (
        ('[job]\ncommand = "true"\nvarm = "2GiB"\n', f"nvq: {bad}: job.varm: unknown key"),
        ('[job]\ncommand = "true"\nvram = "2GB"\n', f"nvq: {bad}: job.vram: "),
        ('[job]\ncommand = "true"\ngpus = -1\n', f"nvq: {bad}: job.gpus: expected an integer >= 0"),
        ('[job]\ncommand = "true"\ncuda = "new"\n', f"nvq: {bad}: job.cuda: "),
        ('[job]\ncommand = "true"\nafter = "0,-3"\n', f"nvq: {bad}: job.after: "),
        ('[job]\ncommand = "true"\ntimeout = 0\n', f"nvq: {bad}: job.timeout: "),
        ('[job]\ncommand = "true"\n[extra]\n', f"nvq: {bad}: extra: unknown key"),
        ("[job\n", f"nvq: {bad}: invalid TOML"),
    ):
        bad.write_text(text)
        r = nvq.run("job", "submit", "--manifest", str(bad))
        assert r.code == 2 and r.err.startswith(expected), (text, r.err)
        assert len(r.err.strip().splitlines()) == 1
    r = nvq.run("job", "submit", "--manifest", str(tmp_path / "none.toml"), "--json")
    assert r.code == 2 and "cannot read" in r.json()["error"]
    assert nvq.json("job", "ls")["jobs"] == []


def test_project_test_runs_here_under_the_memory_limit(nvq: Nvq, tmp_path: Path) -> None:
    manifest = tmp_path / "manifest.toml"
    manifest.write_text(
        "[job]\n"
        f'command = "{PY} -c \\"x = bytearray(600 * 1024 * 1024); print(len(x))\\""\n'
        'memory = "300MiB"\n'
    )
    limited = nvq.run("project", "test", "--manifest", str(manifest), "--json")
    doc = limited.json()
    assert limited.code == 1 and doc["exit_code"] == 1
    assert doc["memory_limit_mb"] == 300 and "MemoryError" in doc["stderr_tail"]
    human = nvq.run("project", "test", "--manifest", str(manifest))
    assert human.code == 1 and "memory limit of 300 MiB" in human.err
    free = nvq.run("project", "test", "--manifest", str(manifest), "--skip-limits")
    assert free.code == 0 and free.out.strip() == str(600 * 1024 * 1024)
    # It ran here, in the foreground: no daemon was needed or started.
    assert not (nvq.home / "daemon.sock").exists()


def test_project_test_passes_exit_codes_and_env(nvq: Nvq, tmp_path: Path) -> None:
    manifest = tmp_path / "m.toml"
    manifest.write_text(
        '[job]\ncommand = "echo $NVQ_JOB_NAME $V; exit 4"\nname = "trial"\nenv = { V = "7" }\n'
    )
    r = nvq.run("project", "test", "--manifest", str(manifest))
    assert r.code == 4 and r.out == "trial 7\n"
