"""Reservations through the real CLI: `nvq reserve add|ls|rm`, `--reservation`. A
reservation whose window is open runs its own jobs on its card and keeps others off
it; one still to come lets a job whose --timeout ends before it use its card, not an
untimed one (reason `Reservation`); removing one gives its card back."""

from __future__ import annotations

from tests.cluster import Nvq

BIG = ("--gpus", "1", "--vram", "20GiB")
SPIN = "while :; do sleep 0.2; done"


def test_reserved_cards_run_their_jobs_and_short_ones_before_the_window(nvq: Nvq) -> None:
    nvq.ok("reserve", "add", "night", "--cards", "local:0", "--start", "1h", "--end", "3h")
    now = nvq.json("reserve", "add", "lab", "--cards", "loc:1", "--end", "1h", "--note", "demo")
    assert (now["cards"], now["users"], now["note"]) == (["local:1"], [], "demo")
    listed = nvq.json("reserve", "ls")["reservations"]
    assert [r["name"] for r in listed] == ["lab", "night"]  # by start
    # Overlapping windows on one card, or an end before the start: refused, nothing made.
    clash = nvq.run("reserve", "add", "x", "--cards", "local:0", "--start", "2h", "--end", "4h")
    assert clash.code == 2 and clash.err.startswith("nvq: local:0 already reserved by night")
    back = nvq.run("reserve", "add", "y", "--cards", "local:1", "--start", "2h", "--end", "1h")
    assert (back.code, back.err) == (2, "nvq: --end must come after --start\n")
    nosuch = nvq.run("job", "submit", "--reservation", "nosuch", "--", "true")
    assert (nosuch.code, nosuch.err) == (2, "nvq: --reservation: no reservation named 'nosuch'\n")
    assert len(nvq.json("reserve", "ls")["reservations"]) == 2
    (local,) = nvq.nodes_up()  # its cards are known once its runner has said hello
    assert [g["reservation"] for g in local["gpus"]] == ["night", "lab"]
    assert "local:1 reserved for lab" in nvq.ok("queue", "nodes").out

    inside = nvq.submit(*BIG, "--reservation", "lab", "--", SPIN)
    assert nvq.wait_for(inside["id"], lambda j: j["state"] == "running")["gpus"] == [1]
    # Card 0 is free, but its window comes before an untimed job would end.
    untimed = nvq.submit(*BIG, "--", SPIN)
    held = nvq.wait_for(untimed["id"], lambda j: j.get("reason") == "Reservation")
    assert held["reason_detail"].startswith("the cards with room are reserved (night)")
    short = nvq.submit(*BIG, "--timeout", "10m", "--", SPIN)
    assert nvq.wait_for(short["id"], lambda j: j["state"] == "running")["gpus"] == [0]
    later = nvq.submit(*BIG, "--reservation", "night", "--", "true")
    waits = nvq.json("job", "ls")["jobs"]
    reasons = {j["id"]: (j.get("reason"), j.get("reason_detail", "")) for j in waits}
    assert reasons[later["id"]][0] == "Reservation"
    assert reasons[later["id"]][1].startswith("reservation night starts at ")

    # Without the reservation its card is everyone's again.
    nvq.ok("reserve", "rm", "lab")
    nvq.ok("job", "cancel", str(inside["id"]))
    assert nvq.wait_for(untimed["id"], lambda j: j["state"] == "running")["gpus"] == [1]
    assert nvq.show(later["id"])["state"] == "pending"
    # --gpus N picks free cards: card 0 is night's over an overlapping window.
    picked = nvq.json("reserve", "add", "pick", "--gpus", "1", "--start", "2h", "--end", "4h")
    assert picked["cards"] == ["local:1"]
    none = nvq.run("reserve", "add", "more", "--gpus", "1", "--start", "2h", "--end", "4h")
    assert (none.code, none.err) == (
        2, "nvq: --gpus 1: 0 cards are free of other reservations over that window\n"
    )
    kinds = [e["kind"] for e in nvq.events()]
    assert kinds.count("reservation_added") == 3 and "reservation_removed" in kinds
    nvq.ok("job", "cancel", str(untimed["id"]), str(short["id"]), str(later["id"]))
