"""The queue host's copy of an attempt's output: records in the order they arrived,
rendered for one stream or both, and cut in the middle past its cap."""

from __future__ import annotations

from pathlib import Path

from nvq.daemon.output.output_copy import (
    CopyState,
    Renderer,
    append,
    cut_middle,
    last_lines,
    read_state,
    records,
    write_state,
)


def test_both_streams_render_in_arrival_order_with_marks_only_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "1.out"
    append(path, "stdout", b"half a ")
    append(path, "stderr", b"warning\n")
    append(path, "stdout", b"line\nnext\n")
    recs = list(records(path.read_bytes()))
    assert Renderer("both", False).render(recs) == b"half a warning\nline\nnext\n"
    assert Renderer("stderr", False).render(recs) == b"warning\n"
    marked = Renderer("both", True).render(recs)
    assert marked == b"out| half a \nerr| warning\nout| line\nout| next\n"


def test_a_copy_over_its_cap_keeps_its_head_and_newest_output(tmp_path: Path) -> None:
    path = tmp_path / "1.out"
    for i in range(200):
        append(path, "stdout" if i % 2 else "stderr", f"line {i:03}\n".encode() * 10)
    cap = 4000
    assert cut_middle(path, cap)
    assert path.stat().st_size <= cap
    text = Renderer("both", False).render(list(records(path.read_bytes())))
    assert text.startswith(b"line 000\n")
    assert b"[nvq: output cut here to keep the copy under" in text
    assert text.endswith(b"line 199\n")
    assert b"line 100" not in text
    assert not cut_middle(path, cap)  # under the cap now: left alone


def test_last_lines() -> None:
    assert last_lines(b"a\nb\nc\n", 2, 0) == b"b\nc\n"
    assert last_lines(b"a\nb\nc", 1, 0) == b"c"
    assert last_lines(b"a\nb\n", -1, 0) == b"a\nb\n"
    assert last_lines(b"a\nb\n", 0, 0) == b""
    assert last_lines(b"abcdef\n", -1, 3).endswith(b"ef\n")


def test_offsets_are_recounted_from_the_records_after_a_restart(tmp_path: Path) -> None:
    from nvq.daemon.output.output_copies import _recounted
    from nvq.daemon.output.output_copy import CopyState

    path = tmp_path / "1.out"
    append(path, "stdout", b"abc")
    append(path, "stderr", b"de")
    append(path, "stdout", b"f")
    # the state file was written at the first piece only
    st = _recounted(CopyState(node="n0", offsets={"stdout": 3}), path)
    assert st.offsets == {"stdout": 4, "stderr": 2}
    cut = CopyState(node="n0", offsets={"stdout": 9}, generation=1)
    assert _recounted(cut, path).offsets == {"stdout": 9}  # after a cut: as saved


def test_a_copy_state_is_rewritten_in_place_and_a_long_one_by_rename(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "7" / "1.json"
    st = CopyState(node="n0")
    write_state(path, st)  # the first write makes the file (and its folder)
    made = path.stat().st_ino
    st.done["stdout"] = True
    write_state(path, st)
    assert path.stat().st_ino == made  # no new inode, none freed
    assert read_state(path) == st
    st.node = "n" * 600  # past one sector: replaced whole
    write_state(path, st)
    assert path.stat().st_ino != made and read_state(path) == st
    st.node = "n1"  # back under: the long file is replaced by a sector again
    write_state(path, st)
    assert read_state(path) == st and path.stat().st_size == 512
    assert not list(path.parent.glob("*.tmp"))
