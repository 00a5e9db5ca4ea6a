"""The write order of a job's two streams: how a batch of the kernel's modification
events is split into pieces, and how recorded pieces become what is sent."""

from __future__ import annotations

from pathlib import Path

from nvq_runner.order_records import RECORD, parse_records, pieces_to_send, split_batch
from nvq_runner.write_order import _records_from


def test_one_event_per_stream_takes_all_that_stream_holds() -> None:
    fresh = {"stdout": b"out 1\nout 2\n", "stderr": b"err 1\n"}
    assert split_batch(["stdout", "stderr"], {"stdout": 0, "stderr": 0}, fresh,
                       {"stdout": 12, "stderr": 6}) == [("stdout", 12), ("stderr", 6)]


def test_a_late_batch_is_split_at_line_ends_in_queue_order() -> None:
    # read late: out 1, err 1, out 2, err 2 were all written before the batch was read
    fresh = {"stdout": b"out 1\nout 2\n", "stderr": b"err 1\nerr 2\n"}
    events = ["stdout", "stderr", "stdout", "stderr"]
    limits = {"stdout": 112, "stderr": 19}
    assert split_batch(events, {"stdout": 100, "stderr": 7}, fresh, limits) == [
        ("stdout", 106), ("stderr", 13), ("stdout", 112), ("stderr", 19)]


def test_an_event_without_a_whole_line_yet_joins_the_next() -> None:
    fresh = {"stdout": b"partial", "stderr": b"e\n"}
    assert split_batch(["stdout", "stderr", "stdout"], {}, fresh, {"stdout": 7, "stderr": 2}) == [
        ("stderr", 2), ("stdout", 7)]


def test_a_line_written_after_the_sizes_were_taken_keeps_its_place() -> None:
    # the sizes were taken after `err 9` and before `out 10`, whose event came in the
    # same read: the event stands for at least that line, before the next `err 10`
    fresh = {"stdout": b"out 10\n", "stderr": b"err 9\n"}
    assert split_batch(["stderr", "stdout"], {"stdout": 50, "stderr": 40}, fresh,
                       {"stdout": 50, "stderr": 46}) == [("stderr", 46), ("stdout", 57)]


def test_a_merged_event_takes_what_was_there_before_the_read() -> None:
    # out 1 and out 2 made one event (the queue merges a repeat of its last event)
    fresh = {"stdout": b"out 1\nout 2\nout 3\n", "stderr": b"err 1\n"}
    assert split_batch(["stdout", "stderr"], {}, fresh, {"stdout": 12, "stderr": 6}) == [
        ("stdout", 12), ("stderr", 6)]


def test_nothing_new_is_no_piece() -> None:
    assert split_batch(["stdout"], {"stdout": 5}, {"stdout": b""}, {"stdout": 5}) == []


def test_pieces_to_send_skip_what_was_sent_and_keep_the_order() -> None:
    recorded = [("stdout", 6), ("stderr", 6), ("stdout", 12), ("stderr", 12), ("stdout", 18)]
    assert pieces_to_send(recorded, {"stdout": 0, "stderr": 0}) == [
        ("stdout", 0, 6), ("stderr", 0, 6), ("stdout", 6, 12), ("stderr", 6, 12),
        ("stdout", 12, 18)]
    # taken up again from the copy's offsets: only what it lacks, in order
    assert pieces_to_send(recorded, {"stdout": 12, "stderr": 6}) == [
        ("stderr", 6, 12), ("stdout", 12, 18)]


def test_records_read_back_whole_ones_only() -> None:
    data = RECORD.pack(b"o", 6, 1) + RECORD.pack(b"e", 4, 2)
    assert parse_records(data + data[:5]) == [("stdout", 6), ("stderr", 4)]


def test_a_follower_of_a_cut_record_goes_on_from_its_end(tmp_path: Path) -> None:
    order = tmp_path / "order-1.log"
    order.write_bytes(b"".join(RECORD.pack(b"o", i, 0) for i in (1, 2, 3)))
    recs, pos = _records_from(order, 0)
    assert recs == [("stdout", 1), ("stdout", 2), ("stdout", 3)] and pos == 3 * RECORD.size
    order.write_bytes(RECORD.pack(b"e", 9, 0))  # cut shorter than where it had read to
    assert _records_from(order, pos) == ([], RECORD.size)
    order.write_bytes(order.read_bytes() + RECORD.pack(b"o", 7, 0))
    assert _records_from(order, RECORD.size) == ([("stdout", 7)], 2 * RECORD.size)
