// The operator page: re-read the list whenever a question of the tenant changes (server-sent
// events), and every so often so that ages and time left stay current.
(function () {
  "use strict";
  const link = document.body.dataset.link;
  const list = document.getElementById("pending");
  const count = document.getElementById("count");
  const conn = document.getElementById("conn");
  const url = (name) => "/api/operator/" + name + "?" + link;
  let refreshing = false;
  let again = false;

  async function refresh() {
    if (refreshing) { again = true; return; }
    refreshing = true;
    try {
      do {
        again = false;
        const r = await fetch(url("view"), { cache: "no-store" });
        if (r.ok) {
          const view = await r.json();
          list.innerHTML = view.list;
          count.textContent = view.count;
        }
      } while (again);
    } catch (_) {
      /* the event stream reconnects and asks again */
    } finally {
      refreshing = false;
    }
  }

  const events = new EventSource(url("events"));
  events.addEventListener("hello", () => { conn.hidden = true; refresh(); });
  events.addEventListener("change", refresh);
  events.addEventListener("error", () => { conn.hidden = false; });
  setInterval(refresh, 15000);
})();
