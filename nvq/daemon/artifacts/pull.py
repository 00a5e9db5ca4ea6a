"""`nvq job pull`: copy a job's working directory (or paths in it) and its artifacts
from its node into a staging directory on the queue host, which the CLI then moves
where the user asked. The local node's files are copied; an SSH node's (or a pilot's) come as a tar
stream from `nvq_runner pack` run there."""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import stat
import tarfile
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

import anyio

from nvq.daemon.core.errors import RequestError
from nvq.daemon.core.nodes import NodeRuntime
from nvq.daemon.machines.node_pipes import runner_pipe
from nvq.model import JobRecord
from nvq_runner.tree_paths import safe_path

if TYPE_CHECKING:
    from nvq.daemon.artifacts.artifacts import Artifacts
    from nvq.daemon.core.state import State


def staging_root(home: Path) -> Path:
    return home / "pulls"


def check_paths(paths: list[str]) -> None:
    for rel in paths:
        if not safe_path(rel, typed=True):  # the one rule (nvq_runner/tree_paths.py)
            raise RequestError(f"{rel!r}: give paths inside the job's working directory")


async def located(state: State, artifacts: Artifacts, job: JobRecord) -> tuple[NodeRuntime, str]:
    """`job`'s node, up, and where its artifacts directory is there (its runner says)."""
    if job.node is None:
        raise RequestError(f"job {job.id} has not run yet: nothing to pull")
    node = state.nodes.get(job.node)
    if node is None or node.state != "up":
        raise RequestError(f"job {job.id}'s node {job.node} is not reachable now")
    listing = await artifacts.query(node, job.id)
    if listing is None or not listing.root:
        why = listing.error if listing is not None and listing.error else "no answer"
        raise RequestError(f"cannot find job {job.id}'s directory on {node.name}: {why}")
    return node, listing.root


def work_dir(job: JobRecord, artifacts_root: str) -> PurePosixPath:
    """Where `job` runs on its node, given where its artifacts directory is there."""
    job_dir = PurePosixPath(artifacts_root).parent
    if job.spec.in_place and job.spec.cwd:
        return PurePosixPath(job.spec.cwd)
    if job.spec.manifest_id:
        return job_dir / "work"
    return PurePosixPath(job.spec.workdir) if job.spec.workdir else job_dir


def sources(job: JobRecord, artifacts_root: str, paths: list[str]) -> list[tuple[str, str]]:
    """(path on the node, name under the staging directory) to copy."""
    work = work_dir(job, artifacts_root)
    if paths:
        return [(str(work / rel), rel) for rel in paths]
    out = [(artifacts_root, "artifacts")]
    if not job.spec.in_place:  # an in-place job's directory is already where the user is
        out.insert(0, (str(work), "work"))
    return out


def _writable(root: Path) -> None:
    """Copies of cached files are read-only (0400): give the owner write back."""
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            if not stat.S_ISLNK(st.st_mode):
                os.chmod(path, stat.S_IMODE(st.st_mode) | stat.S_IRUSR | stat.S_IWUSR
                         | (stat.S_IXUSR if stat.S_ISDIR(st.st_mode) else 0))


def copy_local(src: str, dst: Path) -> None:
    if os.path.isdir(src):
        shutil.copytree(src, dst, symlinks=True, ignore=_not_files)
    else:
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst, follow_symlinks=False)


def _not_files(directory: str, names: list[str]) -> set[str]:
    """What a copy leaves out: sockets, fifos and devices a job left in its directory,
    which cannot be copied (opening a socket fails, a fifo would block the copy)."""
    keep = (stat.S_ISREG, stat.S_ISDIR, stat.S_ISLNK)
    left = set()
    for name in names:
        try:
            mode = os.lstat(os.path.join(directory, name)).st_mode
        except OSError:
            continue
        if not any(kind(mode) for kind in keep):
            left.add(name)
    return left


async def _copy_packed(node: NodeRuntime, job: JobRecord, src: str, dst: Path) -> None:
    """`src` through `nvq_runner pack` run beside the node's runner (over SSH, or in a
    step of a pilot's allocation), as a tar stream unpacked here with the "data"
    filter (nothing outside `dst`, no device files, no set-id bits). Not SFTP: its
    recursive get opened a running job's fifo and waited on it for ever, and failed
    on its socket; pack leaves both out, as the local copy does."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    packed = dst.parent / f".{dst.name}.tar"
    pipe = await runner_pipe(node, ["pack", "--path", src])
    try:
        with packed.open("wb") as out:
            while True:
                try:
                    out.write(await pipe.receive())
                except anyio.EndOfStream:
                    break
        ended = getattr(pipe, "ended", None)
        code = await ended() if ended is not None else 0
    finally:
        with anyio.CancelScope(shield=True):
            await pipe.aclose()
    if code != 0:
        packed.unlink(missing_ok=True)
        lines = str(getattr(pipe, "stderr_tail", "")).strip().splitlines()
        ours = [ln for ln in lines if ln.startswith("nvq_runner: ")]  # srun adds its own
        why = (ours or lines or [f"exit status {code}"])[-1].removeprefix("nvq_runner: ")
        raise RequestError(f"job {job.id}: {why} on {node.name}")
    await anyio.to_thread.run_sync(unpack_packed, packed, dst)


def unpack_packed(packed: Path, dst: Path) -> None:
    into = dst.parent / f".{dst.name}.unpacked"
    into.mkdir(mode=0o700)
    try:
        with tarfile.open(packed) as tar:
            tar.extractall(into, filter="data")
        [top] = list(into.iterdir())
        top.rename(dst)
    finally:
        packed.unlink(missing_ok=True)
        shutil.rmtree(into, ignore_errors=True)


def _give_to(root: Path, staging: Path, user: str) -> None:
    """Hand the staged tree to `user` (a member pulling as themselves, the daemon being
    root), who moves it out and removes it: the staging root is theirs to pass through
    and to delete their own entries in (sticky, like /tmp), never to list."""
    try:
        who = pwd.getpwnam(user)
    except KeyError:
        raise RequestError(f"no OS user {user} to hand the pulled files to") from None
    if os.geteuid() != 0:
        raise RequestError(
            f"this queue runs as {pwd.getpwuid(os.geteuid()).pw_name}, not root: it cannot "
            f"hand pulled files to {user}"
        )
    os.chmod(root, 0o1733)
    for dirpath, dirnames, filenames in os.walk(staging):
        os.lchown(dirpath, who.pw_uid, who.pw_gid)
        for name in [*dirnames, *filenames]:
            os.lchown(os.path.join(dirpath, name), who.pw_uid, who.pw_gid)


async def pull_into_staging(
    home: Path, node: NodeRuntime, job: JobRecord, artifacts_root: str, paths: list[str],
    *, for_user: str | None = None, whole: str | None = None,
) -> Path:
    """The staging directory, `for_user`'s when they are not the queue's owner.
    `whole`: instead of `paths`, that directory of the node (`work` in the staging
    directory)."""
    staging = staging_root(home) / f"{job.id}-{secrets.token_hex(4)}"
    staging.mkdir(parents=True, mode=0o700)
    pairs = [(src, staging / name) for src, name in sources(job, artifacts_root, paths)] \
        if whole is None else [(whole, staging / "work")]
    try:
        if node.config is None:
            for src, dst in pairs:
                if not os.path.lexists(src):  # noqa: ASYNC240 - one stat, local node
                    raise RequestError(f"job {job.id} has no {src} on {node.name}")
                await anyio.to_thread.run_sync(copy_local, src, dst)
        else:
            for src, dst in pairs:
                await _copy_packed(node, job, src, dst)
        await anyio.to_thread.run_sync(_writable, staging)
        if for_user is not None:
            await anyio.to_thread.run_sync(_give_to, staging_root(home), staging, for_user)
    except RequestError:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    except Exception as exc:  # OSError here, asyncssh's SFTPError there
        shutil.rmtree(staging, ignore_errors=True)
        raise RequestError(f"cannot copy job {job.id}'s files from {node.name}: {exc}") from None
    return staging
