"""A directory of content-addressed objects: `objects/ab/cdef…` named by the sha256 of
their content. The queue host's blob store and a node's blob cache are both one of
these, so they share how an object is written: into `tmp/` first, verified, then
renamed into place, so a reader never sees half an object and a crash leaves only a
temporary file. Objects are 0600 and directories 0700 whatever the umask: a job's code
and its environment are the submitter's alone.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from nvq_runner.protocol import is_hash

from .errors import NvqRunnerError

BUFFER = 1024 * 1024
FILE_MODE = 0o600
DIR_MODE = 0o700


class ObjectMismatch(NvqRunnerError):
    """What arrived does not hash to the name it was sent under."""


def make_private_dir(path: Path) -> None:
    """mkdir -p with 0700 on every directory it creates (chmod, since umask may strip
    bits from mkdir's mode and an existing 0755 directory is left as someone made it)."""
    missing: list[Path] = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        probe = probe.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):
            directory.mkdir()
            os.chmod(directory, DIR_MODE)


def hash_file(path: Path) -> str:
    # hashlib.file_digest is 3.11+: the runner runs on 3.9 nodes.
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


class ObjectDir:
    def __init__(self, root: Path, file_mode: int = FILE_MODE) -> None:
        self.root = root
        self.file_mode = file_mode
        self.objects = root / "objects"
        self.tmp = root / "tmp"

    def ensure(self) -> None:
        make_private_dir(self.objects)
        make_private_dir(self.tmp)

    def path(self, digest: str) -> Path:
        if not is_hash(digest):
            raise ValueError(f"not a sha256: {digest!r}")
        return self.objects / digest[:2] / digest[2:]

    def has(self, digest: str) -> bool:
        return self.path(digest).is_file()

    def missing(self, digests: Iterable[str]) -> list[str]:
        """The digests not present, each once, in the order first given."""
        out: list[str] = []
        seen: set[str] = set()
        for digest in digests:
            if digest not in seen:
                seen.add(digest)
                if not self.has(digest):
                    out.append(digest)
        return out

    def open(self, digest: str) -> BinaryIO:
        return open(self.path(digest), "rb")

    def read_bytes(self, digest: str) -> bytes:
        return self.path(digest).read_bytes()

    # ------------------------------------------------------------------ writing

    def temp_file(self) -> Path:
        """A fresh path under `tmp/` (same filesystem as the objects) for a caller that
        downloads an object itself and then hands it to `adopt`."""
        self.ensure()
        return self.tmp / f"in-{secrets.token_hex(8)}"

    @contextlib.contextmanager
    def _writer(self) -> Iterator[tuple[BinaryIO, Path]]:
        path = self.temp_file()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        try:
            os.fchmod(fd, FILE_MODE)  # umask may have taken bits from open's mode
            with os.fdopen(fd, "wb") as handle:
                yield handle, path
        except BaseException:
            with contextlib.suppress(OSError):
                path.unlink()
            raise

    def put_chunks(self, chunks: Iterable[bytes], expected: str | None = None) -> str:
        """Store the concatenation of `chunks`; returns its digest. With `expected`, a
        mismatch stores nothing and raises ObjectMismatch."""
        digest = hashlib.sha256()
        with self._writer() as (handle, path):
            for chunk in chunks:
                digest.update(chunk)
                handle.write(chunk)
        return self._place(path, digest.hexdigest(), expected)

    def put_bytes(self, data: bytes, expected: str | None = None) -> str:
        return self.put_chunks([data], expected)

    def put_file(self, source: Path, expected: str | None = None) -> str:
        """Copy a file in (never link: the source may change after this returns). With
        `expected` and the object already present, nothing is read."""
        if expected is not None and self.has(expected):
            return expected
        with open(source, "rb") as handle:
            return self.put_chunks(iter(lambda: handle.read(BUFFER), b""), expected)

    def adopt(self, temp: Path, expected: str) -> str:
        """Move a file the caller wrote under `tmp/` into place after checking it."""
        return self._place(temp, hash_file(temp), expected)

    def _place(self, temp: Path, actual: str, expected: str | None) -> str:
        if expected is not None and actual != expected:
            temp.unlink(missing_ok=True)
            raise ObjectMismatch(f"content hashes to {actual}, expected {expected}")
        target = self.path(actual)
        make_private_dir(target.parent)
        os.chmod(temp, self.file_mode)
        # rename over an existing copy is harmless: same name, same content
        os.replace(temp, target)
        return actual

    # ---------------------------------------------------------------- listing

    def walk(self) -> Iterator[tuple[str, os.stat_result]]:
        """Every object with its stat, in no particular order."""
        if not self.objects.is_dir():
            return
        for fan in os.scandir(self.objects):
            if not fan.is_dir(follow_symlinks=False) or len(fan.name) != 2:
                continue
            for item in os.scandir(fan.path):
                digest = fan.name + item.name
                if is_hash(digest):
                    with contextlib.suppress(FileNotFoundError):
                        yield digest, item.stat(follow_symlinks=False)

    def remove(self, digest: str) -> None:
        self.path(digest).unlink(missing_ok=True)

    def clear_stale_temps(self, older_than: float, now: float) -> int:
        """Remove temporaries an interrupted write left behind; returns bytes freed."""
        freed = 0
        if not self.tmp.is_dir():
            return 0
        for item in os.scandir(self.tmp):
            with contextlib.suppress(FileNotFoundError):
                st = item.stat(follow_symlinks=False)
                if st.st_mtime < now - older_than:
                    os.unlink(item.path)
                    freed += st.st_size
        return freed
