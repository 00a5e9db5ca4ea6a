from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

OLD = 1_600_000_000  # a time well before any test runs: stat-cache entries are not racy


def write(path: Path, data: str | bytes, *, old: bool = True, mode: int | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data)
    else:
        path.write_bytes(data)
    if mode is not None:
        os.chmod(path, mode)
    if old:
        os.utime(path, (OLD, OLD))
    return path


@pytest.fixture
def umask_000() -> Iterator[None]:
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A small training project as a user has it: code, config, ignore files, outputs
    git ignores, a virtual environment and git's own directory."""
    root = tmp_path / "proj"
    write(root / "train.py", "print('training')\n", mode=0o644)
    write(root / "run.sh", "#!/bin/sh\npython train.py\n", mode=0o755)
    write(root / "config.yaml", "lr: 0.1\n")
    write(root / ".gitignore", "*.log\n!keep.log\ndata/\n*.ckpt\n/build\n")
    write(root / ".nvqignore", "scratch/\n")
    write(root / "out.log", "noise\n")
    write(root / "keep.log", "kept\n")
    write(root / "data" / "big.bin", b"\0" * 4096)
    write(root / "build" / "x.o", b"obj")
    write(root / "scratch" / "notes.txt", "mine\n")
    write(root / "model.ckpt", b"weights")
    write(root / "src" / "model.py", "class Model: ...\n")
    write(root / "src" / "build" / "gen.py", "# not the root build/\n")
    write(root / "src" / ".gitignore", "!best.ckpt\n*.tmp\n")
    write(root / "src" / "best.ckpt", b"best")
    write(root / "src" / "cache.tmp", b"tmp")
    write(root / "src" / "__pycache__" / "model.cpython-311.pyc", b"pyc")
    write(root / ".venv" / "pyvenv.cfg", "home = /usr/bin\n")
    write(root / ".venv" / "bin" / "python", b"elf")
    write(root / "env2" / "pyvenv.cfg", "home = /usr/bin\n")
    write(root / ".git" / "HEAD", "ref: refs/heads/main\n")
    os.symlink("/etc/hostname", root / "host-link")
    os.symlink("src", root / "src-link")
    return root
