"""What tells that config.toml changed since the daemon read it (`queue status`)."""

from __future__ import annotations

from pathlib import Path


def file_stamp(path: Path | None) -> tuple[int, int] | None:
    """What tells a config.toml changed since it was read: (mtime ns, size)."""
    try:
        st = path.stat() if path is not None else None
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size) if st is not None else None
