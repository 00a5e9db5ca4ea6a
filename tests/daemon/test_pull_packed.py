"""`job pull` from a Slurm pilot: the runner's `pack` tar stream unpacked on the queue
host, symlinks kept as links, and nothing written outside the destination."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from nvq.daemon.artifacts.pull import unpack_packed


def test_a_packed_directory_unpacks_as_it_was(tmp_path: Path) -> None:
    src = tmp_path / "node" / "work"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "out.txt").write_text("result\n")
    os.symlink("sub/out.txt", src / "latest")
    packed = tmp_path / "staging" / ".work.tar"
    packed.parent.mkdir()
    with packed.open("wb") as out:
        done = subprocess.run([sys.executable, "-m", "nvq_runner", "pack", "--path", str(src)],
                              stdout=out, check=False)
    assert done.returncode == 0
    unpack_packed(packed, tmp_path / "staging" / "work")
    got = tmp_path / "staging" / "work"
    assert (got / "sub" / "out.txt").read_text() == "result\n"
    assert os.readlink(got / "latest") == "sub/out.txt"
    assert sorted(p.name for p in (tmp_path / "staging").iterdir()) == ["work"]


def test_a_tar_reaching_outside_the_destination_is_refused(tmp_path: Path) -> None:
    packed = tmp_path / "staging" / ".work.tar"
    packed.parent.mkdir()
    with tarfile.open(packed, "w") as tar:
        info = tarfile.TarInfo("work/../../evil")
        info.size = 4
        tar.addfile(info, io.BytesIO(b"evil"))
    with pytest.raises(tarfile.TarError):
        unpack_packed(packed, tmp_path / "staging" / "work")
    assert not (tmp_path / "evil").exists() and not packed.exists()


def test_pack_of_a_missing_path_says_so(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "nvq_runner", "pack", "--path",
                           str(tmp_path / "nope")], capture_output=True, text=True, check=False)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip() == f"nvq_runner: no {tmp_path / 'nope'} here"
