"""The snapshot of a submit directory: which files a job takes with it, and their
content hashes, so the job runs the code as it was when the user pressed enter.

The walk honours `.gitignore` files (the root's and nested ones, with git's rules:
the deepest file decides, the last matching line within it, `!` re-includes) and
`.nvqignore` files (same syntax, read after the `.gitignore` beside them, so they win).
It never enters `.git/`, `__pycache__/`, a virtual environment (a directory holding
`pyvenv.cfg`) or a directory of nvq's own state (`$NVQ_HOME`, or any directory holding a
queue's database or a runner's lock: copying a queue into its own jobs would snapshot
the blob store into itself), and never follows a symlink: a link is recorded as a link. Sizes are
summed before anything is hashed, so an over-size directory is refused at once.

Hashing reads every file once; a stat cache (path, size, mtime_ns, inode → sha256) lets
the next submit of an unchanged tree skip the reading altogether.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from nvq.errors import UserError
from nvq.world.blobs import BlobStore, ObjectMismatch
from nvq.world.statcache import StatCache
from nvq_runner.objects import hash_file
from nvq_runner.protocol import DIR, FILE, LINK, Entry, Manifest

TYPE_CHECKING = False
if TYPE_CHECKING:
    import pathspec

DEFAULT_MAX_SIZE = 512 * 1024 * 1024
IGNORE_FILES = (".gitignore", ".nvqignore")
SKIPPED_NAMES = frozenset({".git", "__pycache__"})
VENV_MARKER = "pyvenv.cfg"
# files only a queue host's or a node's nvq home holds
STATE_MARKERS = ("queue.db", "daemon.lock", "runner.lock", "runner.pid")
LARGEST_SHOWN = 5


class SnapshotError(UserError):
    """The directory cannot be snapshotted; the message is one line for the user."""


class SnapshotTooLarge(SnapshotError):
    pass


@dataclass
class Snapshot:
    root: Path
    manifest: Manifest
    size: int
    # a path that held each blob's content when it was hashed
    sources: dict[str, Path] = field(default_factory=dict)
    hashed: int = 0  # files read this time (the others came from the stat cache)
    # Paths that vanished while it was taken (another program cleaning up): skipped.
    vanished: list[str] = field(default_factory=list)

    def vanished_line(self) -> str | None:
        """One line naming what was skipped (None: nothing was)."""
        if not self.vanished:
            return None
        names = ", ".join(self.vanished[:LARGEST_SHOWN])
        more = ", …" if len(self.vanished) > LARGEST_SHOWN else ""
        return (f"nvq: skipped {len(self.vanished)} path(s) that vanished while the "
                f"snapshot was taken: {names}{more}")


@dataclass
class _Found:
    rel: str
    path: Path
    st: os.stat_result


_Rules = list[tuple[str, "pathspec.GitIgnoreSpec"]]


def format_size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            break
        value /= 1024
    if unit == "B":
        return f"{n} B"
    return f"{value:.1f} {unit}" if value < 10 else f"{value:.0f} {unit}"


def _rules_in(directory: Path) -> pathspec.GitIgnoreSpec | None:
    lines: list[str] = []
    for name in IGNORE_FILES:
        try:
            lines += (directory / name).read_text(errors="replace").splitlines()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            continue
        except OSError as e:
            raise SnapshotError(f"cannot read {directory / name}: {e.strerror}") from None
    if not lines:
        return None
    # Imported only here: pathspec costs a submit more than a small project's whole
    # walk, and a directory without ignore files needs none of it.
    import pathspec

    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    return spec if len(spec.patterns) else None


def _ignored(rules: _Rules, rel: str, is_dir: bool) -> bool:
    for base, spec in reversed(rules):  # the deepest ignore file that decides wins
        local = rel[len(base) + 1:] if base else rel
        result = spec.check_file(local + "/" if is_dir else local)
        if result.include is not None:
            return bool(result.include)
    return False


def _holds_state(path: str, excluded: frozenset[str]) -> bool:
    if path in excluded:
        return True
    return any(os.path.lexists(os.path.join(path, name)) for name in STATE_MARKERS)


def _walk(
    directory: Path, rel: str, rules: _Rules, out: list[_Found],
    excluded: frozenset[str] = frozenset(), vanished: list[str] | None = None,
) -> None:
    spec = _rules_in(directory)
    if spec is not None:
        rules = [*rules, (rel, spec)]
    try:
        items = sorted(os.scandir(directory), key=lambda item: item.name)
    except FileNotFoundError:
        if not rel or vanished is None:
            raise SnapshotError(f"cannot read {directory}: it is gone") from None
        vanished.append(rel + "/")
        return
    except OSError as e:
        raise SnapshotError(f"cannot read {directory}: {e.strerror}") from None
    for item in items:
        if item.name in SKIPPED_NAMES:
            continue
        child = f"{rel}/{item.name}" if rel else item.name
        try:
            st = item.stat(follow_symlinks=False)
        except FileNotFoundError:
            if vanished is None:
                raise
            vanished.append(child)
            continue
        is_dir = stat.S_ISDIR(st.st_mode)
        if not (is_dir or stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
            continue  # sockets, fifos, devices: nothing a job's code can be
        if _ignored(rules, child, is_dir):
            continue
        if is_dir and os.path.lexists(os.path.join(item.path, VENV_MARKER)):
            continue
        if is_dir and _holds_state(item.path, excluded):
            continue
        out.append(_Found(child, Path(item.path), st))
        if is_dir:
            _walk(Path(item.path), child, rules, out, excluded, vanished)


def scan(
    root: Path, exclude: Iterable[Path] = (), vanished: list[str] | None = None
) -> list[_Found]:
    """Every path the snapshot of `root` takes, parents before children, unhashed.
    `exclude` are directories never taken (nvq's home, found by path as well as by
    its marker files, which a fresh home may not have yet). A path that vanishes
    meanwhile is added to `vanished` (given) and skipped."""
    if not root.is_dir():
        raise SnapshotError(f"cannot snapshot {root}: not a directory")
    found: list[_Found] = []
    _walk(root, "", [], found, frozenset(_real(p) for p in exclude), vanished)
    found.sort(key=lambda f: f.rel)
    return found


def _real(path: Path) -> str:
    try:
        return os.path.realpath(path)
    except OSError:
        return str(path)


def _too_large(root: Path, found: list[_Found], total: int) -> SnapshotTooLarge:
    """Name the biggest entries at the top of the tree (descending through a lone
    directory, which would tell the user nothing)."""
    prefix = ""
    while True:
        sizes: dict[str, int] = {}
        for f in found:
            if not stat.S_ISREG(f.st.st_mode) or not f.rel.startswith(prefix):
                continue
            head, sep, _ = f.rel[len(prefix):].partition("/")
            key = prefix + head + ("/" if sep else "")
            sizes[key] = sizes.get(key, 0) + f.st.st_size
        if len(sizes) == 1 and next(iter(sizes)).endswith("/"):
            prefix = next(iter(sizes))
            continue
        break
    ranked = sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = ", ".join(f"{name} ({format_size(size)})" for name, size in ranked[:LARGEST_SHOWN])
    more = ", …" if len(ranked) > LARGEST_SHOWN else ""
    return SnapshotTooLarge(
        f"the snapshot of {root} is {format_size(total)}; the largest entries are "
        f"{shown}{more}; add them to .nvqignore or pass --no-snapshot"
    )


def take_snapshot(
    root: Path, *, max_size: int = DEFAULT_MAX_SIZE, stat_cache: Path | None = None,
    exclude: Iterable[Path] = (),
) -> Snapshot:
    """Walk and hash `root`. `stat_cache` is a file (e.g. `$NVQ_HOME/blobs/statcache`)
    that remembers hashes of files whose stat has not changed since the last time."""
    root = root.resolve()
    vanished: list[str] = []
    found = scan(root, exclude, vanished)
    total = sum(f.st.st_size for f in found if stat.S_ISREG(f.st.st_mode))
    if total > max_size:
        raise _too_large(root, found, total)
    cache = StatCache.load(stat_cache) if stat_cache is not None else StatCache.empty()
    entries: list[Entry] = []
    sources: dict[str, Path] = {}
    hashed = 0
    for f in found:
        mode = stat.S_IMODE(f.st.st_mode)
        if stat.S_ISDIR(f.st.st_mode):
            entries.append(Entry(f.rel, DIR, mode))
        elif stat.S_ISLNK(f.st.st_mode):
            try:
                entries.append(Entry(f.rel, LINK, 0o777, target=os.readlink(f.path)))
            except FileNotFoundError:
                vanished.append(f.rel)
        else:
            digest = cache.get(f.path, f.st)
            if digest is None:
                try:
                    digest = hash_file(f.path)
                except FileNotFoundError:
                    vanished.append(f.rel)
                    continue
                except OSError as e:
                    raise SnapshotError(
                        f"cannot read {f.path}: {e.strerror}; add it to .nvqignore"
                    ) from None
                hashed += 1
                cache.put(f.path, f.st, digest)
            entries.append(Entry(f.rel, FILE, mode, f.st.st_size, digest))
            sources.setdefault(digest, f.path)
    if stat_cache is not None:
        cache.save(stat_cache, keep_under=root)
    return Snapshot(root, Manifest(entries), total, sources, hashed, vanished)


def store_snapshot(snapshot: Snapshot, store: BlobStore) -> str:
    """Copy into the store every blob it lacks, then the manifest; returns the
    manifest id. A file edited since it was hashed is refused rather than stored
    under the wrong name."""
    store.ensure()
    for digest in store.missing(sorted(snapshot.sources)):
        try:
            store.put_file(snapshot.sources[digest], expected=digest)
        except ObjectMismatch:
            raise SnapshotError(
                f"{snapshot.sources[digest]} changed while it was being snapshotted; "
                "submit again"
            ) from None
        except FileNotFoundError:
            _put_or_drop(snapshot, store, digest)
    return store.put_manifest(snapshot.manifest)


def _put_or_drop(snapshot: Snapshot, store: BlobStore, digest: str) -> None:
    """The file that held `digest` vanished after it was hashed: store the content
    from another file that holds it, or leave out every file that did."""
    same = [e for e in snapshot.manifest.entries if e.kind == FILE and e.sha256 == digest]
    for entry in same:
        try:
            store.put_file(snapshot.root / entry.path, expected=digest)
            return
        except (FileNotFoundError, ObjectMismatch):
            continue
    snapshot.vanished += [e.path for e in same]
    snapshot.sources.pop(digest, None)
    kept = [e for e in snapshot.manifest.entries if not (e.kind == FILE and e.sha256 == digest)]
    snapshot.manifest = Manifest(kept)


def cwd_subdir(root: Path, cwd: Path) -> str:
    """Where in the working copy the job starts: `cwd` relative to the snapshot root
    ("" for the root itself)."""
    rel = cwd.resolve().relative_to(root.resolve())
    return "" if str(rel) == "." else rel.as_posix()


def iter_files(snapshot: Snapshot) -> Iterator[tuple[str, Path]]:
    """(sha256, local path) for every distinct blob, for a caller that uploads them
    itself (the forwarded `[remote]` submit)."""
    yield from sorted(snapshot.sources.items())
