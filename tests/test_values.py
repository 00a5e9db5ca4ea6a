"""Sizes, durations, job ids and environment pairs: parsing, formatting, and the error
messages people see."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nvq.values import (
    MAX_INT,
    duration_value,
    env_value,
    format_duration,
    format_mib,
    ids_value,
    parse_duration,
    parse_env_pair,
    parse_ids,
    parse_size,
    size_value,
)


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


def test_parse_size_refuses_what_no_integer_holds() -> None:
    with pytest.raises(ValueError, match=r"^invalid size '99999999999999999999TiB': too large$"):
        parse_size("99999999999999999999TiB")


@pytest.mark.parametrize(("value", "mib"), [("2GiB", 2048), (0, 0), (256, 256)])
def test_size_value_takes_text_or_whole_mib(value: object, mib: int) -> None:
    assert size_value(value) == mib


@pytest.mark.parametrize("value", [-1, True, 1.5, 2**63, [1], None])
def test_size_value_refuses(value: object) -> None:
    with pytest.raises(ValueError, match=r'^expected a size like "512MiB" or a number of MiB'):
        size_value(value)


@pytest.mark.parametrize("text", ["0", "0s", "0h0m", "0.0"])
def test_a_zero_duration_is_refused_unless_zero_means_something(text: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_duration(text)
    assert str(info.value) == f"invalid duration {text!r}: must be more than 0"
    assert parse_duration(text, allow_zero=True) == 0.0


@pytest.mark.parametrize("text", ["99999999999d", "36526d", "9" * 400])
def test_a_duration_past_a_hundred_years_is_refused(text: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_duration(text)
    assert str(info.value) == f"invalid duration {text!r}: more than 100 years"
    assert parse_duration("36524d") == 36524 * 86400


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (float("nan"), "invalid duration NaN: expected a number of seconds"),
        (float("inf"), "invalid duration Infinity: more than 100 years"),
        (float("-inf"), "invalid duration -Infinity: must not be negative"),
        (-1, "invalid duration -1: must not be negative"),
        (0, "invalid duration 0: must be more than 0"),
        (1e12, "invalid duration 1000000000000.0: more than 100 years"),
        (True, 'expected a duration like "30s" or a number of seconds, got true'),
    ],
)
def test_duration_value_refuses_numbers_that_make_no_sense(value: object, problem: str) -> None:
    with pytest.raises(ValueError) as info:
        duration_value(value)
    assert str(info.value) == problem


def test_duration_value_takes_text_or_seconds() -> None:
    assert duration_value("2m") == 120.0
    assert duration_value(2.5) == 2.5
    assert duration_value(0, allow_zero=True) == 0.0


@pytest.mark.parametrize(
    ("text", "ids"),
    [("12,13", [12, 13]), (" 12 , 13 ", [12, 13]), ("7", [7]), ("", []), ("5,", [5])],
)
def test_parse_ids(text: str, ids: list[int]) -> None:
    assert parse_ids(text) == ids


@pytest.mark.parametrize("text", ["0", "-3", "0,-3", "1.5", "+5", "x", "1 2", str(2**63)])
def test_parse_ids_accepts_only_positive_64_bit_integers(text: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_ids(text)
    assert str(info.value).startswith(f"invalid job ids {text!r}: ")
    assert parse_ids(str(MAX_INT)) == [MAX_INT]


def test_ids_value_takes_lists_numbers_and_text() -> None:
    assert ids_value([1, "2, 3"]) == [1, 2, 3]
    assert ids_value(4) == [4] and ids_value("5,6") == [5, 6] and ids_value([]) == []


@pytest.mark.parametrize("value", [0, -1, True, 1.5, [1, 0], ["0,-3"], 2**63])
def test_ids_value_refuses(value: object) -> None:
    with pytest.raises(ValueError, match="job id"):
        ids_value(value)


@pytest.mark.parametrize(
    ("text", "pair"),
    [("A=b", ("A", "b")), ("A=b=c", ("A", "b=c")), ("A=", ("A", "")), ("_x1=y", ("_x1", "y"))],
)
def test_parse_env_pair(text: str, pair: tuple[str, str]) -> None:
    assert parse_env_pair(text) == pair


@pytest.mark.parametrize("text", ["NOEQUALS", "=v", "1A=x", "A B=x", "A-B=x", "A=\0"])
def test_parse_env_pair_refuses(text: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_env_pair(text)
    assert str(info.value) == f"invalid variable {text!r}: expected KEY=VALUE with a valid name"


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"A": 1}, "A: expected a string, got 1"),
        ({"A=B": "x"}, 'invalid variable name "A=B"'),
        ({"A": "x\0"}, "the value of A contains a NUL byte"),
        ("A=1", 'expected a table of strings, got "A=1"'),
    ],
)
def test_env_value_refuses(value: object, problem: str) -> None:
    with pytest.raises(ValueError) as info:
        env_value(value)
    assert str(info.value).startswith(problem)


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
    back = parse_duration(format_duration(seconds), allow_zero=True)
    precision = 3600 if seconds >= 86400 else 60 if seconds >= 3600 else 1
    assert abs(back - seconds) < precision
