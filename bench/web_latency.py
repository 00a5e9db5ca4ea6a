"""The Jobs page's update latency, event → on screen: a job is submitted (through the
client, no CLI start-up) while the page is open in chromium; the time from the daemon's
`job_submitted` event to the job's row appearing in the page, with no reload (the
daemon's event stream → `nvq web` → server-sent event → the page fetches its live
part and swaps it in). A MutationObserver in the page stamps the moment the row lands.

Prints one JSON line. Needs Debian's chromium and Playwright (`make install`)."""

from __future__ import annotations

import argparse
import shutil
import sys
import time

from common import emit, machine, queue, summary_ms

from nvq.client import Client
from tests.web.conftest import CHROMIUM_ARGS, start_web, stop_web

OBSERVE = """() => {
  window.seen = {};
  new MutationObserver(() => {
    for (const tr of document.querySelectorAll('#active tr[data-job]')) {
      const id = tr.dataset.job;
      if (!(id in window.seen)) window.seen[id] = performance.timeOrigin + performance.now();
    }
  }).observe(document.body, {subtree: true, childList: true});
}"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    chromium = shutil.which("chromium")
    if chromium is None:
        sys.exit("web_latency: no chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    from_event: list[float] = []
    from_call: list[float] = []
    with queue("local") as nvq, sync_playwright() as p:
        web = start_web(nvq)
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(web.url)
            page.wait_for_selector("#active")
            page.evaluate(OBSERVE)
            client = Client(nvq.home)
            ids: list[int] = []
            for _ in range(args.runs):
                called = time.time()
                job = client.submit(["sleep", "600"], gpus=0)
                ids.append(job.id)
                page.wait_for_function(f"() => '{job.id}' in window.seen", timeout=20_000)
                seen_ms = page.evaluate(f"() => window.seen['{job.id}']")
                event = client.events(job=job.id)[0]
                from_event.append(seen_ms / 1000 - event.time)
                from_call.append(seen_ms / 1000 - called)
                time.sleep(0.2)  # let the page settle: each run measures one event
            client.cancel(ids)
        finally:
            browser.close()
            stop_web(web)
    emit(
        {
            "bench": "web_latency",
            "machine": machine(),
            "runs": args.runs,
            "event_to_screen": summary_ms(from_event),
            "submit_call_to_screen": summary_ms(from_call),
        }
    )


if __name__ == "__main__":
    main()
