"""`[queue] max_result`, `max_log_size` and `max_log_tail`: sizes, in bytes once read."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvq.config import ConfigError, load_config


def test_defaults_and_values(tmp_path: Path) -> None:
    queue = load_config(tmp_path).queue
    assert (queue.max_result, queue.max_log_size, queue.max_log_tail) == (
        1024**2,
        10 * 1024**3,
        8 * 1024**2,
    )
    (tmp_path / "config.toml").write_text(
        '[queue]\nmax_result = "4MiB"\nmax_log_size = "1GiB"\nmax_log_tail = 16\n'
    )
    queue = load_config(tmp_path).queue
    assert (queue.max_result, queue.max_log_size, queue.max_log_tail) == (
        4 * 1024**2,
        1024**3,
        16 * 1024**2,
    )


@pytest.mark.parametrize("value", ['"0MiB"', '"1MB"', "-1", "true"])
def test_nonsense_is_refused(tmp_path: Path, value: str) -> None:
    (tmp_path / "config.toml").write_text(f"[queue]\nmax_result = {value}\n")
    with pytest.raises(ConfigError, match=r"queue\.max_result"):
        load_config(tmp_path)
