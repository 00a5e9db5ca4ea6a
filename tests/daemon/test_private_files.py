"""Nothing nvq writes is readable by other users, whatever the umask."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

from tests.cluster import Nvq


def _modes(root: os.PathLike[str]) -> list[tuple[str, int]]:
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                continue
            found.append((path, stat.S_IMODE(st.st_mode)))
    return found


def test_everything_under_home_is_private_under_umask_000(nvq: Nvq) -> None:
    old = os.umask(0)
    try:
        job = nvq.submit(
            "--gpus", "0", "--", "sh", "-c",
            'echo out; echo err >&2; echo "{}" > "$NVQ_JOB_DIR/result.json"; '
            'echo ck > "$NVQ_ARTIFACTS/ck.bin"; echo step > "$NVQ_STATUS_FILE"',
        )
        code, _ = nvq.wait(job["id"])
        assert code == 0
        nvq.ok("queue", "backup", str(nvq.home / "backups" / "one.db"))
    finally:
        os.umask(old)
    assert stat.S_IMODE(nvq.home.stat().st_mode) == 0o700
    wide = [
        (p, oct(m)) for p, m in _modes(nvq.home)
        if m & 0o077 and not p.endswith(".sh")  # no group/other bits on anything
    ]
    assert wide == []


def test_the_control_socket_never_exists_with_wider_modes(nvq: Nvq) -> None:
    # Under umask 000 a socket made by bind() is 0777 until chmod: watch the home while
    # the daemon starts and check every sighting of the socket.
    code = """
import os, stat, subprocess, sys, time
os.umask(0)
env = dict(os.environ)
p = subprocess.Popen([sys.executable, "-m", "nvq", "daemon"], env=env,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
sock = os.path.join(env["NVQ_HOME"], "daemon.sock")
worst = 0
deadline = time.monotonic() + 20
while time.monotonic() < deadline:
    try:
        worst |= stat.S_IMODE(os.lstat(sock).st_mode)
    except FileNotFoundError:
        continue
    if worst and time.monotonic() > deadline - 18:
        break
print(oct(worst))
"""
    r = subprocess.run([sys.executable, "-c", code], env=nvq.env, capture_output=True,
                       text=True, timeout=60)
    assert r.stdout.strip() in ("0o600", "0o660"), r.stdout + r.stderr
