"""`job edit --add-after` refuses an edge that would make jobs wait on each other for
ever, naming the cycle, and stores nothing."""

from __future__ import annotations

from tests.cluster import Nvq


def test_an_edit_that_closes_a_cycle_is_refused(nvq: Nvq) -> None:
    nvq.ok("queue", "drain", "local")  # nothing starts: all three stay pending
    a = nvq.submit("--", "true")["id"]
    b = nvq.submit("--after", str(a), "--", "true")["id"]
    c = nvq.submit("--after", str(b), "--", "true")["id"]
    r = nvq.run("job", "edit", str(a), "--add-after", str(c))
    assert r.code == 1, r.out + r.err
    assert r.err.strip() == f"nvq: job {a} would wait for itself: {a} → {c} → {b} → {a}"
    assert nvq.show(a)["after"] == []
    assert "job_edited" not in [e["kind"] for e in nvq.show(a)["events"]]
