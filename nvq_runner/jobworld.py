"""What a job needs around it before its process starts: the working copy of its
snapshot, the environment it carried (merged with the node's), and its setup.

The working copy is `$NVQ_JOB_DIR/work`, built from the node's blob cache after
fetching what the cache lacks; a later attempt of the same job reuses it (its outputs
are still there). The login environment of a remote node (`bash -lc env`) is read
once per runner start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from . import workfiles
from .blobcache import DEFAULT_CACHE_SIZE, BlobCache
from .blobfetch import BlobFetcher, FetchError
from .errors import NvqRunnerError
from .image_load import ImageError, ensure_image
from .input_views import InputsError, InputViews
from .job_artifacts import ArtifactsError, JobArtifacts
from .jobfiles import JobDir, tail_text
from .node_env import environ_with, local_env, remote_env
from .protocol import Manifest, ManifestError, SetupPhase, Start
from .setup_env import (
    DEFAULT_SETUP_FILES,
    EnvPaths,
    ensure_env,
    job_env,
    setup_files,
    setup_key,
)

log = logging.getLogger(__name__)

LOGIN_TIMEOUT = 30.0
# what a login shell is started with: who the user is, nothing of the runner's own
LOGIN_SEED = ("HOME", "USER", "LOGNAME", "SHELL", "LANG")
SETUP_LOG = "setup.log"
SETUP_LOG_LINES = 20


class PrepareError(NvqRunnerError):
    """The job cannot start; the message is for the user."""


class SetupFailed(PrepareError):
    """The job's --setup failed (reported as the `setup` phase's failure)."""


# Told when the attempt's setup begins (False, False) and when it ended well
# (True, cached): the runner journals it as `SetupPhase`.
OnSetup = Callable[[bool, bool], None]


def setup_reporter(emit: Callable[[Callable[[int], SetupPhase]], None], msg: Start) -> OnSetup:
    def on_setup(done: bool, cached: bool) -> None:
        emit(lambda seq: SetupPhase(seq=seq, job_id=msg.job_id, attempt=msg.attempt,
                                    at=time.time(), done=done, cached=cached))

    return on_setup


@dataclass
class Prepared:
    workdir: Optional[Path] = None  # None: as the Start says (its workdir, or the job dir)
    env: Optional[dict[str, str]] = None  # None: the runner's environment plus `env`
    dropped: list[str] = field(default_factory=list)


def job_owner(user: str) -> tuple[int, int] | None:
    """(uid, gid) of the user a job runs as when that is not the runner's; None for the
    runner's own job, or a user this node lacks (the launch says so)."""
    if not user:
        return None
    import pwd

    try:
        who = pwd.getpwnam(user)
    except KeyError:
        return None
    return None if who.pw_uid == os.geteuid() else (who.pw_uid, who.pw_gid)


def give_tree(top: Path, owner: tuple[int, int]) -> None:
    """Make everything under `top` (and `top`) `owner`'s, links themselves included."""
    os.lchown(top, *owner)
    for folder, dirs, files in os.walk(top):
        for name in (*dirs, *files):
            os.lchown(os.path.join(folder, name), *owner)


def work_dir(d: JobDir) -> Path:
    return d.path / "work"


class JobWorld:
    def __init__(self, home: Path, cache: BlobCache, fetcher: BlobFetcher,
                 artifacts: JobArtifacts | None = None) -> None:
        self.home = home
        self.cache = cache
        self.fetcher = fetcher
        self.artifacts = artifacts or JobArtifacts(fetcher)
        self.inputs = InputViews(fetcher)
        self._login: dict[str, str] | None = None
        self._login_lock = threading.Lock()
        self.on_image_loaded: Callable[[], None] | None = None  # the node's images changed

    @staticmethod
    def needed(msg: Start) -> bool:
        return bool(msg.manifest_id or msg.env_mode != "runner" or msg.setup
                    or msg.artifacts_tree or msg.image or msg.inputs)

    async def prepare(self, msg: Start, d: JobDir, on_setup: OnSetup | None = None) -> Prepared:
        prepared = Prepared()
        manifest: Manifest | None = None
        # [[nodes]] cache_size as the queue says today (0: it is not set there)
        self.cache.max_bytes = msg.cache_size or DEFAULT_CACHE_SIZE
        if msg.manifest_id:
            manifest = await self._working_copy(msg, d)
            top = work_dir(d)
            prepared.workdir = top / msg.subdir if msg.subdir else top
        if msg.env_mode == "remote":  # may run a login shell: off the loop
            env, prepared.dropped = await asyncio.to_thread(self._env, msg)
        else:  # a merge of dicts: cheaper here than a hop to a thread and back
            env, prepared.dropped = self._env(msg)
        if msg.setup:
            cwd = prepared.workdir or (Path(msg.workdir).expanduser() if msg.workdir else d.path)  # noqa: ASYNC240
            if on_setup is not None:
                on_setup(False, False)
            env, ran = await asyncio.to_thread(self._setup, msg, d, manifest, cwd, env)
            if on_setup is not None:
                on_setup(True, not ran)
        prepared.env = env
        if msg.image:
            try:
                if await ensure_image(msg, d, self.cache, self.fetcher) and self.on_image_loaded:
                    self.on_image_loaded()
            except (ImageError, FetchError, ManifestError, OSError,
                    subprocess.SubprocessError) as exc:
                raise PrepareError(f"cannot bring the image {msg.image} to this node: {exc}") \
                    from None
        if msg.artifacts_tree:
            # last: a job that fails to prepare must not leave a mount behind
            try:
                await self.artifacts.prepare(msg.job_id, msg.artifacts_tree, d.artifacts,
                                             lazy=msg.lazy_artifacts, node=msg.node,
                                             owner=job_owner(msg.user))
            except ArtifactsError as exc:
                raise PrepareError(str(exc)) from None
        if msg.inputs:
            try:
                await self.inputs.prepare(msg.job_id, msg.inputs, d.inputs,
                                          lazy=msg.lazy_artifacts, node=msg.node,
                                          owner=job_owner(msg.user))
            except InputsError as exc:
                await self.artifacts.close(msg.job_id)  # no mount left behind
                raise PrepareError(str(exc)) from None
        return prepared

    def attempt_ended(self, job_id: int) -> None:
        """Unmount the attempt's artifacts (whatever way it ended)."""
        asyncio.get_running_loop().create_task(self._close_views(job_id))

    async def _close_views(self, job_id: int) -> None:
        await self.artifacts.close(job_id)
        await self.inputs.close(job_id)

    # ------------------------------------------------------------ working copy

    async def _working_copy(self, msg: Start, d: JobDir) -> Manifest:
        manifest = self.cache.load_manifest(msg.manifest_id)
        try:
            if manifest is None:
                await self.fetcher.fetch(msg.job_id, [msg.manifest_id], {})
                manifest = self.cache.load_manifest(msg.manifest_id)
                if manifest is None:
                    raise PrepareError("the snapshot's manifest did not arrive")
            top = work_dir(d)
            if top.is_dir():
                return manifest  # an earlier attempt's copy, with its outputs
            d.path.mkdir(mode=0o700, parents=True, exist_ok=True)
            owner = job_owner(msg.user)
            missing = await asyncio.to_thread(self._build, manifest, top, d, owner)
            if missing:
                sizes = {e.sha256: e.size for e in manifest.files()}
                await self.fetcher.fetch(msg.job_id, missing, sizes)
                missing = await asyncio.to_thread(self._build, manifest, top, d, owner)
                if missing:
                    raise PrepareError(
                        f"{len(missing)} snapshot file(s) left the node's cache before "
                        "use; raise [[nodes]] cache_size")
        except FetchError as exc:
            raise PrepareError(f"cannot fetch the job's snapshot: {exc}") from None
        except (ManifestError, OSError) as exc:
            raise PrepareError(f"cannot build the job's working copy: {exc}") from None
        return manifest

    def _build(self, manifest: Manifest, top: Path, d: JobDir,
               owner: tuple[int, int] | None = None) -> list[str]:
        """The working copy from the cache (one trip to a thread, not two): the hashes
        missing from the cache, or [] once it is built and recorded. Another user's
        copy is copied, not linked (a link shares the cache's inode: chowning it would
        give them the cache's file), and made theirs."""
        missing = self.cache.materialise(manifest, top, link=owner is None)
        if not missing and owner is not None:
            give_tree(top, owner)
        if not missing:
            # what the copy was built with: the job's own files are told from these
            workfiles.record(d.path)
        return missing

    # ------------------------------------------------------------ environment

    def _env(self, msg: Start) -> tuple[dict[str, str] | None, list[str]]:
        # the runner's own settings (fake GPUs, sampling) are nvq's, never captured
        node = {**environ_with("NVQ_"), **msg.node_env}
        if msg.env_mode == "local":
            return local_env(msg.env_captured, node=node, cli=msg.env), []
        if msg.env_mode == "remote":
            merged = remote_env(msg.env_captured, login=self.login_env(),
                                path_exists=os.path.exists, node=node, cli=msg.env)
            return merged.env, [str(item) for item in merged.dropped]
        if msg.setup:  # nothing captured, but the setup needs an environment to run in
            return {**os.environ, **msg.node_env, **msg.env}, []
        return None, []

    def login_env(self) -> dict[str, str]:
        with self._login_lock:
            if self._login is None:
                self._login = _read_login_env()
            return self._login

    # ------------------------------------------------------------ setup

    def _setup(
        self, msg: Start, d: JobDir, manifest: Manifest | None, cwd: Path,
        env: dict[str, str] | None,
    ) -> tuple[dict[str, str], bool]:
        """The job's environment, and whether the setup ran (False: cached)."""
        base = env if env is not None else {**os.environ, **msg.env}
        patterns = tuple(msg.setup_files) or DEFAULT_SETUP_FILES
        files = setup_files(manifest, msg.subdir, patterns) if manifest is not None else {}
        owner = job_owner(msg.user)
        key = setup_key(msg.setup, files, msg.user if owner is not None else "")
        if owner is not None:  # as the job itself will see them (spawn.job_env)
            import pwd

            who = pwd.getpwuid(owner[0])
            base = {**base, "HOME": who.pw_dir, "USER": who.pw_name, "LOGNAME": who.pw_name}
        # While it runs, the job's setup.log is the build's own log, so `job logs
        # --setup` follows it; once done, a copy (or nothing, when it was cached).
        live = d.path / SETUP_LOG
        d.path.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            live.unlink(missing_ok=True)
            live.symlink_to(EnvPaths(self.home, key).log)
        result = ensure_env(
            self.home, key, msg.setup, cwd=cwd, env=base,
            should_stop=lambda: d.read_tombstone() >= msg.attempt, owner=owner,
        )
        if live.is_symlink():
            live.unlink()
        if result.ran or not result.ok:
            d.path.mkdir(mode=0o700, parents=True, exist_ok=True)
            try:
                shutil.copyfile(result.log, d.path / SETUP_LOG)
            except OSError as exc:
                log.warning("job %s: cannot keep the setup log: %s", msg.job_id, exc)
        if not result.ok:
            tail = tail_text(result.log, lines=SETUP_LOG_LINES)
            command = msg.setup if len(msg.setup) <= 80 else msg.setup[:77] + "..."
            raise SetupFailed(f"setup `{command}` failed ({result.reason}):\n{tail}".rstrip())
        return job_env(result, base), result.ran


def _read_login_env() -> dict[str, str]:
    """What `bash -lc env` gives on this node, started from who the user is alone.
    Without bash (or when it hangs), the runner's own environment stands in."""
    seed = {k: os.environ[k] for k in LOGIN_SEED if k in os.environ}
    seed["PATH"] = os.defpath
    try:
        out = subprocess.run(
            ["bash", "-lc", "env -0"], env=seed, stdin=subprocess.DEVNULL,
            capture_output=True, timeout=LOGIN_TIMEOUT, check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("cannot read the login environment (%s); using the runner's", exc)
        return dict(os.environ)
    env: dict[str, str] = {}
    for item in out.split(b"\0"):
        name, sep, value = item.decode(errors="replace").partition("=")
        if sep and name and name not in ("_", "SHLVL", "PWD", "OLDPWD"):
            env[name] = value
    return env
