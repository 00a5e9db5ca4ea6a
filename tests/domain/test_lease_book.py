"""The daemon's record of the lease a runner may hold (nvq.domain.lease_book): every
write renews the longest lease not yet superseded; the runner's echo of a heartbeat
supersedes what came before it."""

from __future__ import annotations

from nvq.domain.lease_book import LeaseBook


def test_writes_renew_the_lease_the_runner_holds() -> None:
    book = LeaseBook()
    book.heartbeat(98.0)
    book.wrote(1000.0)
    assert book.until == 1098.0
    book.wrote(1005.0)
    assert book.until == 1103.0


def test_a_shorter_lease_counts_only_once_the_runner_holds_it() -> None:
    book = LeaseBook()
    book.heartbeat(98.0)
    book.wrote(1000.0)
    seq = book.heartbeat(16.0)  # a reload shortened node_grace
    book.wrote(1001.0)
    # Until the echo the runner may still hold 98 s, renewed by this write.
    assert book.until == 1099.0
    book.held(seq)
    assert (book.until, book.lease) == (1017.0, 16.0)
    book.wrote(1002.0)
    assert book.until == 1018.0


def test_a_planned_stops_grant_is_honoured_until_superseded() -> None:
    book = LeaseBook()
    book.grant(5000.0, 3600.0)  # queue.db: the previous daemon's max_downtime
    book.wrote(1500.0)  # a new daemon connects: the runner renews its hour
    assert book.until == 5100.0
    seq = book.heartbeat(98.0)
    book.held(seq)  # echoed before its write was counted: nothing superseded yet
    assert book.until == 5100.0
    book.wrote(1501.0)
    assert book.until == 1501.0 + 3600.0
    book.held(seq)  # the runner now holds 98 s, from that write on
    assert (book.until, book.lease) == (1599.0, 98.0)


def test_echoed_is_the_newest_heartbeat_the_runner_said_it_holds() -> None:
    # A planned stop waits for this before the daemon closes its links: a grant
    # written but never processed leaves the runner on its short lease.
    book = LeaseBook()
    first = book.heartbeat(14.0)
    grant = book.heartbeat(3600.0)
    assert book.echoed == 0
    book.held(first)  # before its write was counted: the echo is still seen
    assert book.echoed == first < grant
    book.wrote(100.0)
    book.held(grant)
    assert book.echoed == grant
    book.held(first)  # a late echo of an older one does not go back
    assert book.echoed == grant
