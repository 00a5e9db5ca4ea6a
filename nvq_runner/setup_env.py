"""`--setup`: build a job's environment once per node for each distinct setup, and
reuse it.

A setup is keyed by its command and the content of the files it depends on
(requirements, lock files): the same key on the same node means the same environment,
so ten jobs of a sweep build it once and a changed `requirements.txt` builds it anew.
It runs in `<runner home>/envs/<key>/`, exported as `NVQ_ENV_DIR`; one setup per key
runs at a time on a node (an flock, so a second runner thread or process waits, then
finds it built). Success is marked by a file beside the directory; a failed setup
leaves no mark, so the next job tries again, and its log stays for the job that failed.

These are plain blocking functions: the runner's launcher calls them from a thread.
"""

from __future__ import annotations

import contextlib
import fcntl
import fnmatch
import hashlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Optional

from nvq_runner.protocol import FILE, Manifest

DEFAULT_SETUP_FILES = ("requirements*.txt", "pyproject.toml", "uv.lock", "environment.yml")
POLL = 0.2


@dataclass(frozen=True)
class SetupResult:
    key: str
    env_dir: Path
    ok: bool
    log: Path
    ran: bool  # False: an earlier job built it and this one reused it
    exit_code: Optional[int] = None  # of the setup command, when it ran
    reason: str = ""  # why it failed, in words ("exit 1", "timed out after 600 s")


def setup_key(command: str, file_hashes: Mapping[str, str], user: str = "") -> str:
    """sha256 over the command and each named file's path and content hash; and the
    user it is built as, when that is not the runner's: one user's environment is code
    another user's job would run, so users never share one."""
    digest = hashlib.sha256()
    if user:
        digest.update(b"user\0" + user.encode() + b"\0")
    digest.update(b"setup\0" + command.encode() + b"\0")
    for path in sorted(file_hashes):
        digest.update(f"{path}\0{file_hashes[path]}\0".encode())
    return digest.hexdigest()


def setup_files(
    manifest: Manifest, subdir: str = "", patterns: tuple[str, ...] = DEFAULT_SETUP_FILES,
) -> dict[str, str]:
    """The files of the snapshot a setup depends on, {path: sha256}: those whose names
    match `patterns` (relative to the job's directory `subdir` when they hold a `/`),
    at the snapshot's root or in the job's directory."""
    base = f"{subdir}/" if subdir else ""
    out: dict[str, str] = {}
    for entry in manifest.entries:
        if entry.kind != FILE:
            continue
        parent, _, name = entry.path.rpartition("/")
        for pattern in patterns:
            if "/" in pattern:
                hit = fnmatch.fnmatchcase(entry.path, base + pattern)
            else:
                hit = parent in ("", subdir) and fnmatch.fnmatchcase(name, pattern)
            if hit:
                out[entry.path] = entry.sha256
                break
    return out


class EnvPaths:
    def __init__(self, home: Path, key: str) -> None:
        envs = home / "envs"
        self.envs = envs
        self.dir = envs / key
        self.ok = envs / f"{key}.ok"
        self.log = envs / f"{key}.log"
        self.lock = envs / f"{key}.lock"


@contextlib.contextmanager
def _locked(path: Path, should_stop: Callable[[], bool]) -> Iterator[bool]:
    """Hold the key's flock; yields False if `should_stop` said so while waiting."""
    with open(path, "a") as handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if should_stop():
                    yield False
                    return
                time.sleep(POLL)
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run(
    command: str, cwd: Path, env: dict[str, str], log: IO[bytes],
    timeout: float | None, should_stop: Callable[[], bool],
    owner: Optional[tuple[int, int]] = None,
) -> tuple[int | None, str]:
    argv = ["bash", "-c", command]
    if owner is not None:  # the job's user's command: never run it as the runner (root)
        argv = ["setpriv", f"--reuid={owner[0]}", f"--regid={owner[1]}", "--init-groups",
                "--", *argv]
    proc = subprocess.Popen(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    deadline = None if timeout is None else time.monotonic() + timeout
    reason = ""
    while True:
        try:
            code = proc.wait(timeout=POLL)
            break
        except subprocess.TimeoutExpired:
            if deadline is not None and time.monotonic() > deadline:
                reason = f"timed out after {timeout:g} s"
            elif should_stop():
                reason = "stopped"
            else:
                continue
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return None, reason
    return code, ("" if code == 0 else f"exit {code}" if code > 0 else f"signal {-code}")


def ensure_env(
    home: Path,
    key: str,
    command: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    owner: Optional[tuple[int, int]] = None,
) -> SetupResult:
    """Make sure the environment for `key` exists on this node, building it with
    `command` (run by bash in `cwd`, the job's working copy, with `env` plus
    NVQ_ENV_DIR) unless an earlier job did. Blocks while another builds the same key.
    `owner`: the (uid, gid) it is built as and belongs to, when that is not the
    runner's (a member's job; its key names the user, see `setup_key`)."""
    paths = EnvPaths(home, key)
    paths.envs.mkdir(parents=True, exist_ok=True)
    if owner is not None:  # the member reaches their environment through these
        for folder in (paths.envs, paths.envs.parent):
            mode = folder.stat().st_mode
            if mode & 0o011 != 0o011:
                folder.chmod((mode & 0o7777) | 0o011)
    with _locked(paths.lock, should_stop) as held:
        if not held:
            return SetupResult(key, paths.dir, False, paths.log, False, None, "stopped")
        if paths.ok.exists():
            return SetupResult(key, paths.dir, True, paths.log, False)
        # what a failed attempt left is not an environment: start from an empty dir
        if os.path.lexists(paths.dir):
            shutil.rmtree(paths.dir, ignore_errors=True)
        paths.dir.mkdir()
        if owner is not None:
            os.chown(paths.dir, *owner)
        run_env = {**env, "NVQ_ENV_DIR": str(paths.dir)}
        with open(paths.log, "wb") as log:
            log.write(f"$ {command}\n".encode())
            log.flush()
            code, reason = _run(command, cwd, run_env, log, timeout, should_stop, owner)
        if code != 0:
            return SetupResult(key, paths.dir, False, paths.log, True, code, reason)
        paths.ok.write_text(f"{command}\n")
        return SetupResult(key, paths.dir, True, paths.log, True, 0)


def job_env(result: SetupResult, env: Mapping[str, str]) -> dict[str, str]:
    """The job's environment with its setup: NVQ_ENV_DIR set, its bin/ first on PATH."""
    path = env.get("PATH", os.defpath)
    return {**env, "NVQ_ENV_DIR": str(result.env_dir),
            "PATH": f"{result.env_dir / 'bin'}:{path}"}
