"""The job page's attempts say what each held on its cards, and when an oom retry
raised its reservation."""

from __future__ import annotations

import sys
from typing import Any

from playwright.sync_api import expect

from tests.cluster import Nvq

WAIT = 30_000  # ms a page may take to show what the queue did
LOAD = f"{sys.executable} -m nvq_runner.fakeload"


def test_the_job_page_shows_each_attempts_peak_and_resize(nvq: Nvq, page: Any, web: Any) -> None:
    nvq.write_gpus('cuda = "13.0"\n[[gpu]]\nname = "Fake T4"\nmemory = "5GiB"\n'
                   '[[gpu]]\nname = "Fake A100"\nmemory = "16GiB"\nutil = 50\n'
                   '[[gpu.process]]\npid = 4242\nuser = "alice"\nused = "2GiB"\n')
    job = nvq.submit(
        "--vram", "4GiB", "--retries", "1", "--retries-on", "oom",
        "--", f"{LOAD} --mib 6144 --seconds 0 --oom --until-sampled",
    )["id"]  # fmt: skip
    assert nvq.wait(job)[0] == 0
    page.goto(f"{web.base}/jobs/{job}")
    first = page.locator('#attempts tr[data-attempt="1"] td.memory')
    expect(first).to_have_text("peak 5 GiB of 4 GiB reserved", timeout=WAIT)
    expect(page.locator('#attempts tr[data-attempt="2"] td.memory')).to_have_text(
        "--vram 8 GiB (was 4 GiB: oom); peak 6 GiB of 8 GiB reserved")
