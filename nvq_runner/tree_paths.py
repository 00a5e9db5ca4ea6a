"""The one path-safety rule for every path that is joined beneath a root: the entries
of a tree a node writes out from a list (a submit snapshot's manifest, an artifacts
tree), a file the daemon names on the wire (`ReadChunks`), a file a node lists
(`ArtifactsManifest`) and a path a person types (`nvq job pull PATH`). Security logic,
so it lives once.

`safe_path`: never absolute, never a `..` part, never a NUL (C strings would cut it
short, so what is checked is not what is opened). An exact path (what a program
wrote) is also made of real names only, no empty part and no `.`; a typed one may be
written as a person writes it (`./a`, `a//b`, `a/`, `.`) but not be empty.

`TreePaths` adds what a list needs: each path once, and its parent a directory the
same list named before it. So nothing is written outside the destination, and nothing
through a symlink the list itself made."""

from __future__ import annotations


def safe_path(path: str, *, typed: bool = False) -> bool:
    """May `path` be joined beneath a root without naming anything outside it?"""
    parts = path.split("/")
    if path.startswith("/") or ".." in parts or "\0" in path:
        return False
    if typed:
        return path != ""
    return all(p not in ("", ".") for p in parts)  # "" too: its one part is empty


class TreePaths:
    """Paths checked in list order; `add` says what is wrong with the next one."""

    def __init__(self, what: str) -> None:
        self.what = what  # "manifest", "artifacts tree": named in every refusal
        self._dirs = {""}
        self._seen: set[str] = set()

    def add(self, path: str, is_dir: bool) -> str | None:
        """The refusal for `path` (None: safe), remembering it when it is safe."""
        if not safe_path(path):
            return f"unsafe path in {self.what}: {path!r}"
        if path in self._seen:
            return f"duplicate path in {self.what}: {path!r}"
        self._seen.add(path)
        if path.rpartition("/")[0] not in self._dirs:
            return f"{path!r} comes before its directory in the {self.what}"
        if is_dir:
            self._dirs.add(path)
        return None


__all__ = ["TreePaths", "safe_path"]
