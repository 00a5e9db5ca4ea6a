"""The typing machine's side of a `job submit` forwarded over `[remote]`: the snapshot
is taken here (with this machine's `[submit]` settings and stat cache), and its blobs
the queue host lacks cross over one SSH call before the submit itself is forwarded
naming the snapshot's manifest."""

from __future__ import annotations

import subprocess
from pathlib import Path

from nvq.config import SubmitConfig
from nvq.errors import Internal
from nvq.world.blobsync import SourceChanged, SyncError, send
from nvq.world.snapshot import SnapshotError, take_snapshot
from nvq.world.submission import STAT_CACHE, blob_root
from nvq_runner.protocol import encode_manifest, manifest_id

__all__ = ["ForwardError", "SnapshotError", "send_snapshot"]


class ForwardError(Internal):
    """The snapshot did not reach the queue host. `code` is the exit status to leave
    with (the remote command's, or ssh's); an empty message: the queue host has
    already said why."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def send_snapshot(
    cwd: Path, home: Path, submit: SubmitConfig, ssh_command: list[str],
) -> str:
    """Snapshot `cwd`, send what the queue host lacks by running `ssh_command` (which
    runs `nvq queue receive-blobs` there), and return the manifest id. Raises
    SnapshotError for the user's directory, ForwardError for the exchange."""
    snapshot = take_snapshot(
        cwd, max_size=submit.max_snapshot, stat_cache=blob_root(home) / STAT_CACHE,
        exclude=[home],
    )
    encoded = encode_manifest(snapshot.manifest)
    mid = manifest_id(snapshot.manifest)
    sources: dict[str, Path | bytes] = dict(sorted(snapshot.sources.items()))
    sources[mid] = encoded  # last: the queue host stores the files before the manifest
    try:
        proc = subprocess.Popen(ssh_command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    except FileNotFoundError:
        raise ForwardError("[remote] needs the ssh client, and none is installed", 2) from None
    assert proc.stdin is not None and proc.stdout is not None
    failure: str | None = None
    try:
        send(sources, proc.stdout, proc.stdin)
    except SourceChanged as exc:
        proc.kill()
        proc.wait()
        raise SnapshotError(str(exc)) from None
    except (SyncError, BrokenPipeError) as exc:
        failure = str(exc) or "the queue host stopped reading"
    finally:
        try:
            proc.stdin.close()
        except BrokenPipeError:
            pass
        code = proc.wait()
        proc.stdout.close()
    if code != 0:  # the queue host (or ssh) has said why on stderr
        raise ForwardError("", code)
    if failure is not None:
        raise ForwardError(f"cannot send the snapshot to the queue host: {failure}", 1)
    return mid
