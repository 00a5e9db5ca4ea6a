"""Sizes and durations: parsing, formatting, and the error messages people see."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nvq.units import format_duration, format_mib, parse_duration, parse_size


@pytest.mark.parametrize(
    ("text", "mib"),
    [
        ("20G", 20480),
        ("20GiB", 20480),
        ("20gib", 20480),
        ("20 GiB", 20480),
        ("20Gi", 20480),
        ("20480M", 20480),
        ("512MiB", 512),
        ("512", 512),
        ("1.5GiB", 1536),
        ("0.5G", 512),
        (".5G", 512),
        ("1T", 1024 * 1024),
        ("2TiB", 2 * 1024 * 1024),
        ("1024K", 1),
        ("1K", 1),  # rounded up: a reservation is never silently shrunk
        ("1025KiB", 2),
        ("0.1", 1),
        ("0", 0),
        ("  7m  ", 7),
    ],
)
def test_parse_size(text: str, mib: int) -> None:
    assert parse_size(text) == mib


def test_parse_size_rejects_garbage_naming_the_text() -> None:
    with pytest.raises(ValueError) as info:
        parse_size("banana")
    assert str(info.value) == (
        "invalid size 'banana': expected a number with a binary unit, like 20GiB or 512MiB"
    )


@pytest.mark.parametrize("text", ["", "G", "-1G", "1.2.3G", "20 Gigs", "1e3", "20PiB", "nan"])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="invalid size"):
        parse_size(text)


@pytest.mark.parametrize(("text", "suggestion"), [("20GB", "20GiB"), ("512mb", "512MiB")])
def test_parse_size_refuses_decimal_units_with_a_hint(text: str, suggestion: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_size(text)
    assert "binary" in str(info.value)
    assert suggestion in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90", 90.0),
        ("1.5", 1.5),
        ("90s", 90.0),
        ("5m", 300.0),
        ("2h", 7200.0),
        ("1d", 86400.0),
        ("1h30m", 5400.0),
        ("1h 30m", 5400.0),
        ("1.5h", 5400.0),
        ("1d2h3m4s", 93784.0),
        ("2H", 7200.0),
    ],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "h", "1x", "1h30", "5m1h", "1m1m", "-5s", "soon", "1 h x"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_duration(text)
    assert str(info.value).startswith(f"invalid duration {text!r}: ")


@pytest.mark.parametrize(
    ("mib", "text"),
    [
        (0, "0MiB"),
        (512, "512MiB"),
        (1023, "1023MiB"),
        (1024, "1GiB"),
        (1536, "1.5GiB"),
        (20480, "20GiB"),
        (20500, "20.02GiB"),
        (1024 * 1024, "1TiB"),
        (-512, "-512MiB"),
    ],
)
def test_format_mib(mib: int, text: str) -> None:
    assert format_mib(mib) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (45, "45s"),
        (59.6, "1m00s"),
        (192, "3m12s"),
        (3600, "1h00m"),
        (7500, "2h05m"),
        (93600, "1d02h"),
        (-5, "-5s"),
    ],
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


@given(st.integers(min_value=0, max_value=1 << 40))
def test_format_mib_round_trips_whole_units(mib: int) -> None:
    # Formatting keeps two decimals; the parsed value is within that rounding.
    back = parse_size(format_mib(mib))
    unit = 1024 * 1024 if mib >= 1024 * 1024 else 1024 if mib >= 1024 else 1
    assert abs(back - mib) <= unit * 0.005 + 1


@given(st.integers(min_value=0, max_value=10**7))
def test_format_duration_parses_back_within_its_precision(seconds: int) -> None:
    back = parse_duration(format_duration(seconds))
    precision = 3600 if seconds >= 86400 else 60 if seconds >= 3600 else 1
    assert abs(back - seconds) < precision
