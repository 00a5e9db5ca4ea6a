"""The control socket is never wider than its final mode, not even between bind()
and a chmod: it is 0600 the moment it exists, and opened to the members group (0660)
only when `[queue] members_group` says so."""

from __future__ import annotations

import grp
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from nvq.daemon.serve import control_server
from nvq.home import Home


@pytest.fixture
def umask_000() -> Iterator[None]:
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def _open(monkeypatch: pytest.MonkeyPatch, path: Path, group: str | None) -> int:
    """Open the socket; return its mode as bind() left it (before anything else ran)."""
    real = anyio.create_unix_listener
    seen: list[int] = []

    async def watched(p: Any, **kw: Any) -> Any:
        listener = await real(p, **kw)
        seen.append(stat.S_IMODE(os.lstat(p).st_mode))
        return listener

    monkeypatch.setattr("nvq.daemon.serve.control_server.anyio.create_unix_listener", watched)

    async def main() -> None:
        listener = await control_server.open_control_socket(path, group)
        await listener.aclose()

    anyio.run(main)
    (mode,) = seen
    return mode


def test_the_socket_is_0600_from_bind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, umask_000: None
) -> None:
    sock = tmp_path / "daemon.sock"
    assert _open(monkeypatch, sock, None) == 0o600
    assert stat.S_IMODE(os.lstat(sock).st_mode) == 0o600
    assert os.umask(0) == 0  # the daemon's umask is back as it was


def test_a_members_group_gets_0660_only_after_the_group_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, umask_000: None
) -> None:
    group = grp.getgrgid(os.getgid()).gr_name
    sock = tmp_path / "daemon.sock"
    assert _open(monkeypatch, sock, group) == 0o600
    st = os.lstat(sock)
    assert (stat.S_IMODE(st.st_mode), st.st_gid) == (0o660, os.getgid())


def test_an_existing_home_is_narrowed(tmp_path: Path, umask_000: None) -> None:
    home = Home(tmp_path / "nvq")
    home.root.mkdir(mode=0o755)
    home.config.write_text("[queue]\n")
    home.config.chmod(0o644)
    home.make_private()
    assert stat.S_IMODE(home.root.stat().st_mode) == 0o700
    assert stat.S_IMODE(home.config.stat().st_mode) == 0o600
    home.make_private(grp.getgrgid(os.getgid()).gr_name)
    assert stat.S_IMODE(home.root.stat().st_mode) == 0o710
