from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

from nvq_runner.protocol import DIR, FILE, Entry, Manifest
from nvq_runner.setup_env import SetupResult, ensure_env, job_env, setup_files, setup_key

ENV = {"PATH": os.environ["PATH"]}
# each run leaves a line in a file outside the environment, so the test can count runs
BUILD = 'echo built >> "$RUNS" && mkdir -p "$NVQ_ENV_DIR/bin" && echo ok'


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def runs(tmp_path: Path) -> int:
    path = tmp_path / "runs"
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_ten_jobs_with_one_setup_build_it_once(tmp_path: Path) -> None:
    env = {**ENV, "RUNS": str(tmp_path / "runs")}
    key = setup_key(BUILD, {"requirements.txt": sha(b"torch\n")})
    results: list[SetupResult | None] = [None] * 10
    home = tmp_path / "home"

    def job(i: int) -> None:
        results[i] = ensure_env(home, key, BUILD, cwd=tmp_path, env=env)

    threads = [threading.Thread(target=job, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert runs(tmp_path) == 1
    assert all(r is not None and r.ok for r in results)
    assert sum(1 for r in results if r is not None and r.ran) == 1
    first = next(r for r in results if r is not None and r.ran)
    assert first.env_dir == home / "envs" / key and (first.env_dir / "bin").is_dir()
    assert first.log.read_text() == f"$ {BUILD}\nok\n"


def test_a_changed_requirements_file_builds_a_new_environment(tmp_path: Path) -> None:
    env = {**ENV, "RUNS": str(tmp_path / "runs")}
    home = tmp_path / "home"
    one = ensure_env(home, setup_key(BUILD, {"requirements.txt": sha(b"torch\n")}), BUILD,
                     cwd=tmp_path, env=env)
    two = ensure_env(home, setup_key(BUILD, {"requirements.txt": sha(b"torch\nnumpy\n")}), BUILD,
                     cwd=tmp_path, env=env)
    assert runs(tmp_path) == 2 and one.env_dir != two.env_dir


def test_a_failed_setup_keeps_its_log_and_is_tried_again(tmp_path: Path) -> None:
    home = tmp_path / "home"
    command = 'echo "building" && echo "no matching distribution" >&2 && exit 3'
    key = setup_key(command, {})
    failed = ensure_env(home, key, command, cwd=tmp_path, env=ENV)
    assert (failed.ok, failed.ran, failed.exit_code, failed.reason) == (False, True, 3, "exit 3")
    assert failed.log.read_text() == f"$ {command}\nbuilding\nno matching distribution\n"
    again = ensure_env(home, key, command, cwd=tmp_path, env=ENV)
    assert again.ran and not again.ok


def test_a_setup_that_overruns_is_stopped(tmp_path: Path) -> None:
    result = ensure_env(tmp_path, "k" * 64, "sleep 30", cwd=tmp_path, env=ENV, timeout=0.5)
    assert (result.ok, result.reason) == (False, "timed out after 0.5 s")


def test_the_setup_runs_in_the_jobs_copy(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("torch\n")
    command = 'cp requirements.txt "$NVQ_ENV_DIR/"'
    result = ensure_env(tmp_path / "home", setup_key(command, {}), command,
                        cwd=tmp_path, env=ENV)
    assert result.ok and (result.env_dir / "requirements.txt").read_text() == "torch\n"


def test_the_key_depends_on_the_setup_files_of_the_snapshot() -> None:
    manifest = Manifest([
        Entry("pyproject.toml", FILE, 0o644, 1, sha(b"p")),
        Entry("requirements-dev.txt", FILE, 0o644, 1, sha(b"r")),
        Entry("sub", DIR, 0o755),
        Entry("sub/requirements.txt", FILE, 0o644, 1, sha(b"s")),
        Entry("train.py", FILE, 0o644, 1, sha(b"t")),
        Entry("vendor", DIR, 0o755),
        Entry("vendor/uv.lock", FILE, 0o644, 1, sha(b"v")),
    ])
    assert setup_files(manifest) == {
        "pyproject.toml": sha(b"p"), "requirements-dev.txt": sha(b"r"),
    }
    assert set(setup_files(manifest, "sub")) == {
        "pyproject.toml", "requirements-dev.txt", "sub/requirements.txt",
    }
    assert setup_files(manifest, "", ("vendor/*.lock",)) == {"vendor/uv.lock": sha(b"v")}
    files = setup_files(manifest)
    assert setup_key("pip install .", files) != setup_key("pip install -e .", files)
    assert setup_key("x", files) != setup_key("x", {**files, "pyproject.toml": sha(b"q")})


def test_the_job_finds_its_environment_first_on_path(tmp_path: Path) -> None:
    result = ensure_env(tmp_path, setup_key("true", {}), "true", cwd=tmp_path, env=ENV)
    env = job_env(result, {"PATH": "/usr/bin:/bin"})
    assert env["PATH"] == f"{result.env_dir}/bin:/usr/bin:/bin"
    assert env["NVQ_ENV_DIR"] == str(result.env_dir)
