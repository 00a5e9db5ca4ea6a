"""The one path-safety rule for every tree a node writes out from a list of entries (a
submit snapshot's manifest, an artifacts tree): security logic, so it lives once.

An entry's path is relative, made of real names (no empty part, `.` or `..`), given
once, and its parent is a directory the same list named before it. So nothing is
written outside the destination, and nothing through a symlink the list itself made."""

from __future__ import annotations


class TreePaths:
    """Paths checked in list order; `add` says what is wrong with the next one."""

    def __init__(self, what: str) -> None:
        self.what = what  # "manifest", "artifacts tree": named in every refusal
        self._dirs = {""}
        self._seen: set[str] = set()

    def add(self, path: str, is_dir: bool) -> str | None:
        """The refusal for `path` (None: safe), remembering it when it is safe."""
        parts = path.split("/")
        if path.startswith("/") or any(p in ("", ".", "..") for p in parts):
            return f"unsafe path in {self.what}: {path!r}"  # "" too: its one part is empty
        if path in self._seen:
            return f"duplicate path in {self.what}: {path!r}"
        self._seen.add(path)
        if "/".join(parts[:-1]) not in self._dirs:
            return f"{path!r} comes before its directory in the {self.what}"
        if is_dir:
            self._dirs.add(path)
        return None


__all__ = ["TreePaths"]
