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
