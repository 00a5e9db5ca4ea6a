"""A private tmux server for tests that need a real terminal: run a command in a
session of a given size, type into it (`send-keys`), read the screen (`capture-pane`)
and wait until some text appears on it."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path


class Tmux:
    def __init__(self, socket: Path, env: dict[str, str], session: str = "tui") -> None:
        # a private server per test: nothing shared with a person's own tmux
        self.socket = str(socket)
        self.session = session
        # the terminal's size is tmux's window, not whatever COLUMNS this process has
        self.env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")}
        self.env["TERM"] = "xterm-256color"

    def __call__(self, *args: str) -> str:
        proc = subprocess.run(
            ["tmux", "-S", self.socket, *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    def start(self, command: str, cols: int = 200, rows: int = 50) -> None:
        self("new-session", "-d", "-s", self.session, "-x", str(cols), "-y", str(rows), command)

    def keys(self, *keys: str) -> None:
        self("send-keys", "-t", self.session, *keys)

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", self.session)

    def until(self, text: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if text in screen:
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never appeared on the screen:\n{screen}")
            time.sleep(0.1)

    def close(self) -> None:
        subprocess.run(["tmux", "-S", self.socket, "kill-server"], capture_output=True, timeout=30)
