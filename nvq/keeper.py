"""The keeper: something that keeps `nvq daemon` running on the queue host.

The default keeper is a small supervisor process (`python -m nvq.keeper HOME`) in a
session of its own: it runs the daemon, and when the daemon exits it starts it again
(after a backoff when it keeps dying young). `--systemd` instead writes a user unit
with `Restart=always` and enables it. `$NVQ_HOME/keeper.json` records which is
installed; `state` says whether it is up.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from nvq.detach import spawn_detached
from nvq.errors import UserError
from nvq.home import Home

log = logging.getLogger("nvq.keeper")

QUICK_EXIT = 10.0  # a daemon that dies sooner than this is restarted after a backoff
MAX_BACKOFF = 60.0
# The daemon's exit status when it ends with the stop mark there (`nvq daemon stop`):
# systemd's RestartPreventExitStatus keeps such a planned stop stopped.
EXIT_STOPPED = 4


def unit_name(home: Path) -> str:
    digest = hashlib.sha256(str(home.resolve()).encode()).hexdigest()[:8]
    return f"nvq-{digest}.service"


def unit_path(home: Path, env: dict[str, str] | None = None) -> Path:
    env = dict(os.environ if env is None else env)
    base = Path(env.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "systemd" / "user" / unit_name(home)


def unit_text(home: Path, python: str = sys.executable) -> str:
    home = home.resolve()
    return (
        "[Unit]\n"
        f"Description=nvq daemon for {home}\n"
        "\n"
        "[Service]\n"
        f"Environment=NVQ_HOME={home}\n"
        f"ExecStart={python} -P -m nvq.daemon.main {home}\n"
        "Restart=always\n"
        "RestartSec=5\n"
        # `nvq daemon stop` is a planned stop: the unit stays stopped until `nvq daemon
        # start` starts it again; any other exit (a crash) is restarted.
        f"RestartPreventExitStatus={EXIT_STOPPED}\n"
        # Stopping the unit stops the daemon only: runners and jobs live in their own
        # sessions and must survive it.
        "KillMode=process\n"
        "\n"
        "[Install]\n"
        "WantedBy=default.target\n"
    )


def backoff(quick_exits: int) -> float:
    return 0.0 if quick_exits == 0 else min(MAX_BACKOFF, 0.5 * 2 ** (quick_exits - 1))


def _pid(home: Path) -> int | None:
    try:
        pid = int(Home(home).keeper_pid.read_text().strip())
    except (OSError, ValueError):
        return None
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return pid if b"nvq.keeper" in cmdline else None  # not a recycled pid


def read_marker(home: Path) -> dict[str, Any] | None:
    try:
        doc: dict[str, Any] = json.loads(Home(home).keeper_marker.read_text())
    except (OSError, ValueError):
        return None
    return doc


def state(home: Path) -> dict[str, Any] | None:
    """None when no keeper is installed; else its kind and whether it is up."""
    marker = read_marker(home)
    if marker is None:
        return None
    if marker.get("kind") == "systemd":
        up = _systemd_active(marker.get("unit", unit_name(home)))
        return {"kind": "systemd", "up": up, "pid": None, "unit": marker.get("unit_path")}
    pid = _pid(home)
    return {"kind": "supervisor", "up": pid is not None, "pid": pid}


def _systemd_active(unit: str) -> bool:
    exe = shutil.which("systemctl")
    if exe is None:
        return False
    proc = subprocess.run(
        [exe, "--user", "is-active", "--quiet", unit], capture_output=True, check=False
    )
    return proc.returncode == 0


class KeeperError(UserError):
    pass


def install(home: Path, *, systemd: bool, start: bool) -> dict[str, Any]:
    home.mkdir(parents=True, exist_ok=True)
    doc: dict[str, Any] = {"kind": "systemd" if systemd else "supervisor", "home": str(home)}
    if systemd:
        path = unit_path(home)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(unit_text(home))
        doc.update(unit=unit_name(home), unit_path=str(path))
        exe = shutil.which("systemctl")
        if exe is None:
            doc["enabled"] = False
            doc["note"] = (
                f"systemctl not found: the unit is written; enable it with "
                f"`systemctl --user enable --now {unit_name(home)}`"
            )
        else:
            for args in (["daemon-reload"], ["enable", *(["--now"] if start else []), doc["unit"]]):
                proc = subprocess.run(
                    [exe, "--user", *args], capture_output=True, text=True, check=False
                )
                if proc.returncode != 0:
                    err = (proc.stderr or proc.stdout).strip().splitlines()
                    raise KeeperError(
                        f"systemctl --user {' '.join(args)}: "
                        + (err[-1] if err else f"exit {proc.returncode}")
                        + f" (the unit is written to {path})"
                    )
            doc["enabled"] = True
    Home(home).keeper_marker.write_text(json.dumps(doc) + "\n")
    if start and not systemd:
        doc["pid"] = start_supervisor(home)
    return doc


def start_supervisor(home: Path, timeout: float = 10.0) -> int:
    pid = _pid(home)
    if pid is not None:
        return pid
    proc = spawn_detached("nvq.keeper", home, Home(home).keeper_log)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid = _pid(home)
        if pid is not None:
            return pid
        if proc.poll() is not None:
            raise KeeperError(f"the keeper exited at once; see {Home(home).keeper_log}")
        time.sleep(0.02)
    raise KeeperError(f"the keeper did not start; see {Home(home).keeper_log}")


def stop(home: Path, timeout: float = 10.0) -> dict[str, Any]:
    """Stop the keeper (the daemon it started keeps running; `nvq daemon stop` ends it)."""
    marker = read_marker(home)
    if marker is not None and marker.get("kind") == "systemd":
        exe = shutil.which("systemctl")
        if exe is not None:
            subprocess.run(
                [exe, "--user", "disable", "--now", marker["unit"]],
                capture_output=True,
                check=False,
            )
        return {"stopped": True, "kind": "systemd"}
    pid = _pid(home)
    if pid is None:
        return {"stopped": False, "kind": "supervisor"}
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _pid(home) is not None:
        time.sleep(0.02)
    return {"stopped": True, "kind": "supervisor", "pid": pid}


def pause_path(home: Path) -> Path:
    """While this file exists the supervisor starts no daemon (`paused`)."""
    return home / "keeper.paused"


@contextmanager
def paused(home: Path) -> Iterator[dict[str, Any] | None]:
    """No daemon restarts inside: for `queue restore`, which needs the daemon stopped.
    Yields the keeper's state (None when none is up, and nothing is done). The
    supervisor waits while `pause_path` exists; a systemd unit is stopped (which
    stops its daemon too) and started again after."""
    st = state(home)
    if st is None or not st["up"]:
        yield None
        return
    if st["kind"] == "systemd":
        unit = (read_marker(home) or {}).get("unit", unit_name(home))
        _systemctl("stop", unit)
        try:
            yield st
        finally:
            _systemctl("start", unit)
        return
    path = pause_path(home)
    path.write_text(f"{os.getpid()}\n")
    try:
        yield st
    finally:
        path.unlink(missing_ok=True)


def _systemctl(verb: str, unit: str) -> None:
    exe = shutil.which("systemctl") or "systemctl"
    proc = subprocess.run([exe, "--user", verb, unit], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        err = (proc.stderr or proc.stdout).strip().splitlines()
        raise KeeperError(
            f"systemctl --user {verb} {unit}: {err[-1] if err else proc.returncode}; run "
            f"`systemctl --user {verb} {unit}` yourself"
        )


def start_kept(home: Path) -> bool:
    """Let the keeper start the daemon (after `nvq daemon stop`, whose mark the caller
    has cleared): True when one is installed and will start it, so that the daemon that
    runs is the keeper's and a crash of it is restarted."""
    marker = read_marker(home)
    if marker is None:
        return False
    if marker.get("kind") == "systemd":
        if not marker.get("enabled") or shutil.which("systemctl") is None:
            return False
        _systemctl("start", marker.get("unit", unit_name(home)))
        return True
    return _pid(home) is not None  # the supervisor starts it once the mark is gone


def _wait_not_stopped(home: Path) -> None:
    """A daemon stopped with `nvq daemon stop` stays stopped: wait for its mark to go
    (`nvq daemon start`, or any command that starts the daemon, removes it)."""
    mark = Home(home).stopped_mark
    if mark.exists():
        log.info("the daemon was stopped with `nvq daemon stop`: waiting for `nvq daemon start`")
    while mark.exists():
        time.sleep(0.1)


def _wait_unpaused(home: Path) -> None:
    path = pause_path(home)
    if path.exists():
        log.info("paused (%s): starting no daemon until it is gone", path)
    while path.exists():
        try:
            holder = int(path.read_text().strip())
            os.kill(holder, 0)
        except (OSError, ValueError):
            path.unlink(missing_ok=True)  # its process is gone: a pause nobody ends
            break
        time.sleep(0.1)


def supervise(home: Path) -> None:
    """The supervisor's life: run the daemon, restart it when it exits."""
    paths = Home(home)
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s nvq.keeper: %(message)s",
        stream=sys.stderr,
    )
    stopping = False

    def on_term(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # the installing terminal may close
    paths.keeper_pid.write_text(f"{os.getpid()}\n")
    log.info("keeper %d keeping the daemon of %s running", os.getpid(), home)
    quick = 0
    try:
        while not stopping:
            _wait_unpaused(home)
            _wait_not_stopped(home)
            started = time.monotonic()
            with open(paths.log, "ab") as out:
                child = subprocess.Popen(
                    [sys.executable, "-P", "-m", "nvq.daemon.main", str(home)],
                    cwd="/",
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=out,
                )
            code = child.wait()
            if paths.stopped_mark.exists():
                quick = 0  # `nvq daemon stop`: the top of the loop waits for a start
                log.info("daemon exited %d: stopped with `nvq daemon stop`", code)
                continue
            if code == 3:
                # Another daemon (started by a CLI) holds the lock: wait for it to end.
                log.info("a daemon is already running; waiting for it to exit")
                with open(paths.lock_file, "a+") as lock:
                    fcntl.flock(lock, fcntl.LOCK_EX)
                    fcntl.flock(lock, fcntl.LOCK_UN)
                quick = 0
                continue
            lived = time.monotonic() - started
            quick = quick + 1 if lived < QUICK_EXIT else 0
            delay = backoff(quick)
            log.warning("daemon exited %d after %.1fs; restarting in %.1fs", code, lived, delay)
            time.sleep(delay)
    finally:
        paths.keeper_pid.unlink(missing_ok=True)
        log.info("keeper stopped")


def tail_log(home: Path, lines: int) -> str:
    try:
        text = Home(home).keeper_log.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:]) if lines > 0 else text


if __name__ == "__main__":
    supervise(Path(sys.argv[1]))
