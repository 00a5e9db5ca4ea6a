// Keeps an nvq page current: on each event from the daemon (server-sent events on
// /live) the page's live part is fetched again and swapped in; a job page's logs
// follow their stream. Without this script the pages still work, they just stand still.
(function () {
  "use strict";
  const main = document.getElementById("live");
  if (!main) return;
  let pending = null;
  function refresh() {
    if (pending) return;
    pending = setTimeout(async () => {
      pending = null;
      const reply = await fetch(location.href, { headers: { "X-Nvq-Fragment": "1" } });
      if (!reply.ok) return;
      const html = await reply.text();
      // Keep a log the visitor is reading, and a filter being typed, as they are.
      const logs = document.getElementById("logs");
      if (document.activeElement && document.activeElement.closest("#filters")) return;
      main.innerHTML = html;
      const holder = document.getElementById("logs");
      if (logs && holder) holder.replaceWith(logs);
      document.body.dataset.updated = String(Date.now());
    }, 20);
  }
  const events = new EventSource("/live");
  events.onmessage = refresh;

  // What moves without an event: a running job's runtime is counted here, from its
  // start, every second; its progress line (kept by the daemon from the node's
  // samples, which are no events) is read from /progress (a few bytes a job) every
  // few seconds while the page shows a running job.
  function duration(s) {
    s = Math.max(0, Math.floor(s));
    const two = (n) => String(n).padStart(2, "0");
    if (s < 60) return s + "s";
    if (s < 3600) return Math.floor(s / 60) + "m" + two(s % 60) + "s";
    if (s < 86400) return Math.floor(s / 3600) + "h" + two(Math.floor(s % 3600 / 60)) + "m";
    return Math.floor(s / 86400) + "d" + two(Math.floor(s % 86400 / 3600)) + "h";
  }
  function tick() {
    const now = Date.now() / 1000;
    document.querySelectorAll("[data-started]").forEach((el) => {
      el.textContent = duration(now - Number(el.dataset.started));
    });
  }
  setInterval(tick, 1000);
  async function progress() {
    if (!document.querySelector("[data-started]")) return;
    const reply = await fetch("/progress", { headers: { "X-Nvq-Fragment": "1" } });
    if (!reply.ok) return;
    const lines = await reply.json();
    document.querySelectorAll("[data-progress-of]").forEach((el) => {
      const line = lines[el.dataset.progressOf];
      if (line !== undefined && line !== null && el.textContent !== line) el.textContent = line;
    });
  }
  setInterval(progress, 5000);

  document.querySelectorAll("pre.log[data-stream]").forEach((pre) => {
    const source = new EventSource(pre.dataset.stream);
    let first = true;
    source.onmessage = (e) => {
      if (first) { pre.textContent = ""; first = false; }
      pre.textContent += JSON.parse(e.data);
      pre.scrollTop = pre.scrollHeight;
    };
    source.addEventListener("end", () => source.close());
  });
})();
