"""nvq installed for good, as the README says: a wheel from `make dist` in a tool
environment of its own (what `pipx install` / `uv tool install` make), `nvq` on PATH,
and a job submitted from a project's venv runs the project's `python`, not nvq's.

No network: the wheel goes in with --no-deps, and the tool environment finds the
dependencies in this checkout's venv through a path file (appended after its own
site-packages, so the installed nvq is the one imported, not the checkout)."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.cluster import kill_processes_under, make_nvq

ROOT = Path(__file__).resolve().parents[2]


def _tool_env(tmp: Path) -> Path:
    dist = tmp / "dist"
    subprocess.run(
        ["make", "-s", "-C", str(ROOT), "dist", f"DIST={dist}"], check=True, capture_output=True
    )
    (wheel,) = dist.glob("nvq-*.whl")
    tool = tmp / "tool"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tool)], check=True)
    site = Path(
        sysconfig.get_path("purelib", vars={"base": str(tool), "platbase": str(tool)})
    )
    (site / "deps-from-checkout.pth").write_text(sysconfig.get_path("purelib") + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(tool / "bin" / "python"), "install",
         "-q", "--no-deps", "--no-index", str(wheel)],
        check=True, capture_output=True,
    )
    return tool


# Builds a wheel and a venv (make dist, pip): 30-60 s alone, over 120 s under load.
@pytest.mark.timeout(300)
def test_an_installed_nvq_runs_a_job_with_the_projects_python(tmp_path: Path) -> None:
    tool = _tool_env(tmp_path)
    where = subprocess.run(
        [str(tool / "bin" / "python"), "-c", "import nvq, nvq_runner; print(nvq.__file__)"],
        check=True, capture_output=True, text=True, cwd=tmp_path,
    ).stdout
    assert where.startswith(str(tool)), where  # the wheel's nvq, not the checkout's

    nvq = make_nvq(tmp_path / "q")
    project_venv = tmp_path / "proj-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(project_venv)], check=True)
    # ~/.local/bin holds only the `nvq` script; the project's venv is active
    user_bin = tmp_path / "local-bin"
    user_bin.mkdir()
    (user_bin / "nvq").symlink_to(tool / "bin" / "nvq")
    env = dict(nvq.env)
    env["PATH"] = f"{project_venv}/bin:{user_bin}:/usr/bin:/bin"
    env["VIRTUAL_ENV"] = str(project_venv)

    def nvq_cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["nvq", *args], env=env, cwd=nvq.cwd, capture_output=True, text=True, timeout=60
        )

    try:
        sub = nvq_cli("job", "submit", "--gpus", "0", "--", "python", "-c",
                      "import sys; print(sys.prefix)")
        assert sub.returncode == 0, sub.stderr
        assert "nvq's own" not in sub.stderr
        job_id = sub.stdout.split()[2]
        done = nvq_cli("job", "wait", job_id, "--timeout", "60")
        assert done.returncode == 0, done.stdout + done.stderr
        logs = nvq_cli("job", "logs", job_id)
        assert logs.stdout.strip() == str(project_venv), logs

        # nvq's own environment first on PATH (its venv activated): warned once, with the fix
        env["PATH"] = f"{tool}/bin:/usr/bin:/bin"
        env.pop("VIRTUAL_ENV")
        first = nvq_cli("job", "submit", "--gpus", "0", "--", "python", "-c", "print(1)")
        assert first.returncode == 0, first.stderr
        assert f"`python` on this shell's PATH is nvq's own ({tool}/bin/python)" in first.stderr
        assert "pipx install" in first.stderr and "uv tool install" in first.stderr
        again = nvq_cli("job", "submit", "--gpus", "0", "--", "python", "-c", "print(2)")
        assert again.returncode == 0 and "nvq's own" not in again.stderr, again.stderr
    finally:
        subprocess.run(["nvq", "daemon", "stop"], env=env, capture_output=True, timeout=60)
        kill_processes_under(tmp_path)
