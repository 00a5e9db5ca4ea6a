"""The batch script's lines that install the pilots' runner, run by a real bash: the
bundle's installer runs once where `<home>/venv` lacks this build, under a lock, and
not at all where a shared home already holds it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from nvq.clusters.runner_bundle import RunnerBundle, install_lines, pack

# Stands in for node_installer.py's effect only (the real one runs in the Slurm test):
# records each run and writes the build mark the real one writes.
FAKE_INSTALLER = """\
import json, os, sys
home, version, build = sys.argv[1:4]
os.makedirs(os.path.join(home, "venv"), exist_ok=True)
with open(os.path.join(home, "runs"), "a") as f:
    f.write(" ".join(os.path.basename(w) for w in sys.argv[4:]) + "\\n")
with open(os.path.join(home, "venv", "nvq-build.json"), "w") as f:
    json.dump({"version": version, "build": build}, f)
"""


def bundle(tmp_path: Path, home: Path) -> RunnerBundle:
    wheel = tmp_path / "nvq-9.9-py3-none-any.whl"
    wheel.write_bytes(b"not really a wheel")
    data = pack([wheel])
    return RunnerBundle(data, "9.9", "b1234", str(home), sys.executable)


def run(lines: list[str], installer: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    """The lines run by bash with `tmp` as its TMPDIR (where the bundle unpacks)."""
    script = "set -e\n" + "\n".join(lines) + "\necho done\n"
    # The packed installer is the real one; swap in the fake after unpacking.
    script = script.replace(
        '  tar -xzf "$B/runner.tgz" -C "$B"\n',
        f'  tar -xzf "$B/runner.tgz" -C "$B"\n  cp {installer} "$B/node_installer.py"\n',
    )
    tmp.mkdir(exist_ok=True)
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=False,
                          env={**os.environ, "TMPDIR": str(tmp)})


def test_installs_once_where_the_home_lacks_the_build(tmp_path: Path) -> None:
    installer = tmp_path / "fake_installer.py"
    installer.write_text(FAKE_INSTALLER)
    home = tmp_path / "runner"
    lines = install_lines(bundle(tmp_path, home))
    for _ in range(2):
        done = run(lines, str(installer), tmp_path / "tmp")
        assert done.returncode == 0 and done.stdout.endswith("done\n"), done.stderr
        assert not any((tmp_path / "tmp").iterdir())  # the unpacked bundle is gone
    assert (home / "runs").read_text() == "nvq-9.9-py3-none-any.whl\n"


def test_a_shared_home_holding_the_build_installs_nothing(tmp_path: Path) -> None:
    installer = tmp_path / "fake_installer.py"
    installer.write_text(FAKE_INSTALLER)
    home = tmp_path / "runner"
    (home / "venv").mkdir(parents=True)
    (home / "venv" / "nvq-build.json").write_text('{"version": "9.9", "build": "b1234"}')
    done = run(install_lines(bundle(tmp_path, home)), str(installer), tmp_path / "tmp")
    assert done.returncode == 0, done.stderr
    assert not (home / "runs").exists()


def test_a_failing_install_ends_the_script(tmp_path: Path) -> None:
    installer = tmp_path / "bad_installer.py"
    installer.write_text("import sys; sys.exit('install: no space left')\n")
    done = run(install_lines(bundle(tmp_path, tmp_path / "runner")), str(installer),
               tmp_path / "tmp")
    assert done.returncode != 0 and "done" not in done.stdout
    assert "no space left" in done.stderr
    assert not any((tmp_path / "tmp").iterdir())  # nor left in /tmp when it fails
