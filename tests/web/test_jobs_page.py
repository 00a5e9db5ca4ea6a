"""The Jobs page in a real browser: what it lists, that it follows the queue by
itself, and that its buttons act on jobs."""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from playwright.sync_api import expect

from nvq.client import Client
from tests.cluster import Nvq
from tests.web.conftest import screenshot

WAIT = 30_000  # ms a page may take to show what the queue did


def test_a_running_job_moves_to_completed_without_a_reload(
    nvq: Nvq, page: Any, tmp_path: Any
) -> None:
    stop = tmp_path / "stop"
    job = nvq.submit(
        "--name", "trainer", "--vram", "2GiB", "--",
        "bash", "-c", f"echo 'epoch 1/3' > $NVQ_STATUS_FILE 2>/dev/null; while [ ! -e {stop} ]; do sleep 0.1; done",
    )  # fmt: skip
    row = page.locator(f'#active tr[data-job="{job["id"]}"]')
    expect(row).to_have_attribute("data-state", "running", timeout=WAIT)
    expect(row).to_contain_text("trainer")
    expect(row).to_contain_text("local:")
    screenshot(page, "jobs")

    stop.touch()
    done = page.locator(f'#completed tr[data-job="{job["id"]}"]')
    expect(done).to_have_attribute("data-state", "completed", timeout=WAIT)
    expect(page.locator(f'#active tr[data-job="{job["id"]}"]')).to_have_count(0)


def test_completed_list_holds_the_newest_hundred_of_the_last_thirty_days(
    nvq: Nvq, page: Any
) -> None:
    first = nvq.submit("--gpus", "0", "--array", "0-119", "--", "true")
    ids = list(range(first["id"], first["id"] + 120))
    code, jobs = nvq.wait(*ids, timeout=120)
    assert code == 0, jobs
    # Forty of them ended long ago: backdated in the store, as if the queue were old.
    old = ids[:40]
    with sqlite3.connect(nvq.home / "queue.db") as db:
        db.execute(
            f"UPDATE jobs SET created_at = created_at - 3456000, started_at = started_at"
            f" - 3456000, ended_at = ended_at - 3456000 WHERE id IN ({','.join(map(str, old))})"
        )
    page.reload()
    rows = page.locator("#completed tbody tr[data-job]")
    expect(rows).to_have_count(80)
    shown = [int(x) for x in rows.evaluate_all("rs => rs.map(r => r.dataset.job)")]
    assert not set(shown) & set(old)
    expect(page.locator("#older")).to_contain_text("nvq job ls --all")

    # Recent ones past a hundred: the page keeps the newest hundred, newest first.
    more = nvq.submit("--gpus", "0", "--array", "0-39", "--", "true")
    more_ids = list(range(more["id"], more["id"] + 40))
    code, _ = nvq.wait(*more_ids, timeout=120)
    assert code == 0
    page.reload()
    expect(rows).to_have_count(100)
    shown = [int(x) for x in rows.evaluate_all("rs => rs.map(r => r.dataset.job)")]
    ended = _ended_at(nvq)
    recent = sorted((i for i in ended if i not in old), key=lambda i: (ended[i], i), reverse=True)
    assert shown == recent[:100]


def _ended_at(nvq: Nvq) -> dict[int, float]:
    with sqlite3.connect(nvq.home / "queue.db") as db:
        return dict(db.execute("SELECT id, ended_at FROM jobs WHERE ended_at IS NOT NULL"))


def test_pause_and_resume_from_the_page(nvq: Nvq, page: Any) -> None:
    job = nvq.submit("--name", "long", "--", "sleep", "300")
    row = page.locator(f'#active tr[data-job="{job["id"]}"]')
    expect(row).to_have_attribute("data-state", "running", timeout=WAIT)
    asked: list[str] = []

    def accept(dialog: Any) -> None:
        asked.append(dialog.message)
        dialog.accept()

    page.on("dialog", accept)
    row.get_by_role("button", name="pause").click()
    expect(row).to_have_attribute("data-state", "paused", timeout=WAIT)
    assert nvq.show(job["id"])["state"] == "paused"
    expect(row.get_by_role("button", name="pause")).to_have_count(0)

    assert asked and asked[0].startswith(f"Pause job {job['id']}?")  # a running job: asked
    row.get_by_role("button", name="resume").click()
    expect(row).to_have_attribute("data-state", "running", timeout=WAIT)
    assert nvq.show(job["id"])["state"] in ("pending", "running")
    nvq.ok("job", "cancel", str(job["id"]))


def test_the_job_page_follows_its_output(nvq: Nvq, page: Any, web: Any, tmp_path: Any) -> None:
    go = tmp_path / "go"
    job = nvq.submit(
        "--name", "talker", "--",
        "bash", "-c", f"echo first line; while [ ! -e {go} ]; do sleep 0.1; done; echo second line",
    )  # fmt: skip
    nvq.wait_for(job["id"], lambda j: j["state"] == "running")
    page.goto(f"{web.base}/jobs/{job['id']}")
    expect(page.locator("#stdout")).to_contain_text("first line", timeout=WAIT)
    expect(page.locator("main")).to_contain_text("echo first line")
    go.touch()
    expect(page.locator("#stdout")).to_contain_text("second line", timeout=WAIT)
    expect(page.locator("#job-state")).to_have_text("completed", timeout=WAIT)
    expect(page.locator("#events")).to_contain_text("job_dispatched")


def test_nodes_page_shows_each_card_and_whose_memory_it_holds(
    nvq: Nvq, page: Any, web: Any
) -> None:
    nvq.write_gpus(
        'cuda = "13.0"\n[[gpu]]\nname = "Fake A100"\nmemory = "24GiB"\nutil = 35\n'
        '[[gpu.process]]\npid = 4242\nuser = "someone"\nused = "6GiB"\n'
        '[[gpu]]\nname = "Fake A100"\nmemory = "24GiB"\n'
    )
    nvq.submit("--vram", "4GiB", "--", "sleep", "300")
    client = Client(nvq.home)
    deadline = time.monotonic() + 30
    while not any(p.foreign_mb for p in client.gpu_history()) and time.monotonic() < deadline:
        time.sleep(0.2)
    _yesterday_in_the_store(nvq)
    page.goto(f"{web.base}/nodes")
    card = page.locator('#nodes tr[data-node="local"][data-gpu="0"]')
    expect(card).to_contain_text("35%", timeout=WAIT)
    foreign = card.locator(".bar .foreign")
    expect(foreign).to_have_attribute("style", "width: 25.0%", timeout=WAIT)
    expect(page.locator('#nodes tr[data-node="local"]')).to_have_count(2)
    expect(page.locator("#nodes .node-state")).to_have_text("up")
    expect(card.locator("svg.chart polyline.mem")).to_have_count(1)
    assert int(card.locator("svg.chart").get_attribute("data-points") or 0) > 200
    screenshot(page, "nodes")


def _yesterday_in_the_store(nvq: Nvq) -> None:
    """A day of card 0's history (a busy afternoon), as if the queue had run a day."""
    now = time.time() // 60 * 60
    rows = []
    for m in range(1, 1440, 5):
        busy = 600 < m < 1100
        rows.append(
            (now - m * 60, "local", 0, 24576, 6144, 12288 if busy else 0, 16384 if busy else 0,
             85 if busy else 5)
        )  # fmt: skip
    with sqlite3.connect(nvq.home / "queue.db") as db:
        db.executemany("INSERT OR REPLACE INTO gpu_history VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)


def test_a_waiting_job_says_why(nvq: Nvq, page: Any) -> None:
    for _ in range(2):
        nvq.submit("--vram", "20GiB", "--", "sleep", "300")
    job = nvq.submit("--vram", "20GiB", "--", "sleep", "300")
    shown = nvq.wait_for(job["id"], lambda j: j.get("reason") == "Resources")
    page.reload()
    row = page.locator(f'#active tr[data-job="{job["id"]}"]')
    expect(row).to_have_attribute("data-state", "pending")
    expect(row).to_contain_text("Resources")
    expect(row).to_contain_text(shown["reason_detail"])


def test_the_usage_page_shows_each_accounts_gpu_hours(nvq: Nvq, page: Any, web: Any) -> None:
    done = nvq.submit("--tag", "eval", "--", "sleep", "0.2")
    nvq.wait(done["id"])
    page.goto(f"{web.base}/usage?since=1d&by=user")
    row = page.locator('#usage tr[data-key="root"]')
    expect(row).to_contain_text("1", timeout=WAIT)  # one completed job
    # 0.2 s of one card reads 0.00 GPU-h: a bar as long as that use is no bar at all
    expect(row).to_contain_text("0.00")
    expect(row.locator(".usage-bar .queue")).to_have_attribute("style", "width: 0.0%")
    expect(page.locator("#usage tr.total")).to_have_count(1)
    page.locator('a[href="/usage?since=1d&by=tag"]').click()
    expect(page.locator('#usage tr[data-key="eval"]')).to_have_count(1, timeout=WAIT)
    screenshot(page, "usage")


def test_a_failed_step_and_its_held_follower_are_dealt_with_from_the_page(
    nvq: Nvq, page: Any, web: Any
) -> None:
    failing = nvq.submit(
        "--gpus", "0", "--",
        'echo "attempt $NVQ_ATTEMPT"; head -c 1536 /dev/zero > "$NVQ_ARTIFACTS/model.bin"; exit 3',
    )["id"]  # fmt: skip
    follower = nvq.submit("--gpus", "0", "--after", str(failing), "--", "echo follows")["id"]
    nvq.wait_for(follower, lambda j: j["state"] == "held")
    nvq.wait_for(failing, lambda j: len(j.get("artifact_syncs") or []) == 1)
    page.reload()
    bad = page.locator(f'#ended-badly tr[data-job="{failing}"]')
    expect(bad).to_have_attribute("data-state", "failed")
    expect(bad.locator("td.reason")).to_contain_text("exited with code 3")
    expect(page.locator(f'#completed tr[data-job="{failing}"]')).to_have_count(0)

    # release asks first: dismissed, nothing happens; accepted, the follower runs
    held = page.locator(f'#active tr[data-job="{follower}"]')
    answers = iter([False, True, True])
    asked: list[str] = []

    def answer(dialog: Any) -> None:
        asked.append(dialog.message)
        dialog.accept() if next(answers) else dialog.dismiss()

    page.on("dialog", answer)
    held.get_by_role("button", name="release").click()
    expect(page.locator("#error")).to_have_count(0)
    assert nvq.show(follower)["state"] == "held" and asked[0].startswith(f"Release job {follower}?")
    held.get_by_role("button", name="release").click()
    done = page.locator(f'#completed tr[data-job="{follower}"]')
    expect(done).to_have_attribute("data-state", "completed", timeout=WAIT)

    bad.get_by_role("button", name="requeue").click()  # asked, accepted: runs again
    nvq.wait_for(failing, lambda j: j["attempt"] == 2 and j["state"] == "failed")
    assert asked[2].startswith(f"Run job {failing} again")

    page.goto(f"{web.base}/jobs/{failing}")
    expect(page.locator("#attempts tbody tr[data-attempt]")).to_have_count(2, timeout=WAIT)
    expect(page.locator("#attempts td.runtime").first).not_to_be_empty()
    expect(page.locator("#stdout")).to_contain_text("attempt 2", timeout=WAIT)
    expect(page.locator("#artifacts")).to_contain_text("1.5 KiB")
    page.locator('#attempts tr[data-attempt="1"] a').click()
    expect(page.locator("#stdout")).to_have_text("attempt 1\n", timeout=WAIT)
    screenshot(page, "job-attempts")
