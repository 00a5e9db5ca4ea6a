"""`job pull` over `[remote]`: the queue host stages the job's files as it always does
(from the node, over that node's SSH link) and writes them to its stdout as a tar
stream (`job pull --tar`); this machine unpacks them into a staging directory of its
own home, and `job pull` moves them where the user asked, as it does locally.

The stream is spooled to a file before it is unpacked: when the queue host refuses
(no such job, no files), what came is its error document, passed through unchanged.
"""

from __future__ import annotations

import os
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import IO

import typer

from nvq.cli.params import CliError
from nvq.config import load_config
from nvq.home import default_root
from nvq.remote import SSH_UNREACHABLE, remote_command, shared_connection, ssh_argv

NODE_HEADER = "nvq.node"


def write_tar(staging: Path, node: str, out: IO[bytes]) -> None:
    """What the queue host staged, as one tar stream naming the node it came from."""
    with tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT,
                      pax_headers={NODE_HEADER: node}) as tar:
        for item in sorted(staging.iterdir()):
            tar.add(item, arcname=item.name)
    out.flush()


def pull_through_queue_host(job_id: int, paths: list[str], as_json: bool) -> tuple[Path, str]:
    """(a staging directory here holding the pulled files, the node they came from)."""
    home = default_root()
    cfg = load_config(home).remote
    if cfg is None:
        raise CliError("job pull --over-remote: this machine has no [remote] section", 2)
    argv = ["job", "pull", str(job_id), *paths, "--tar", *(["--json"] if as_json else [])]
    command = remote_command(cfg, argv, os.environ.get("NVQ_SUBMITTER"))
    control = shared_connection(cfg, home)
    pulls = home / "pulls"
    pulls.mkdir(parents=True, exist_ok=True, mode=0o700)
    staging = Path(tempfile.mkdtemp(prefix=f"{job_id}-", dir=pulls))
    try:
        with tempfile.TemporaryFile(dir=pulls) as spool:
            try:
                code = _run(ssh_argv(cfg, command, stdin=False, control=control), spool)
            except FileNotFoundError:
                raise CliError("[remote] needs the ssh client, and none is installed", 2) from None
            spool.seek(0)
            if code != 0:
                if code == SSH_UNREACHABLE:
                    print(f"nvq: cannot reach the queue host {cfg.host} over ssh",
                          file=sys.stderr)
                shutil.copyfileobj(spool, sys.stdout.buffer)  # its --json error, if any
                sys.stdout.flush()
                raise typer.Exit(code)
            try:
                with tarfile.open(fileobj=spool, mode="r:") as tar:
                    tar.extractall(staging, filter="tar")
                    node = tar.pax_headers.get(NODE_HEADER, "")
            except (tarfile.TarError, OSError) as exc:
                raise CliError(f"cannot unpack job {job_id}'s files here: {exc}", 1) from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return staging, node


def _run(argv: list[str], spool: IO[bytes]) -> int:
    import subprocess

    return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=spool, check=False).returncode
