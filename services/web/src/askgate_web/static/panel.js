// askgate Control UI: the docked question panel. Every word is rendered by the server;
// this script only shows, hides and sends. Live updates come over server-sent events.
"use strict";
(() => {
  const body = document.body;
  const link = body.dataset.link;
  const url = (path) => `/api/${path}?${link}`;
  const $ = (id) => document.getElementById(id);
  const timeline = $("timeline"), slot = $("panel-slot"), composer = $("composer");
  const notice = $("notice"), alertBox = $("alert"), conn = $("conn");
  let panel = null; // the pending question on screen: {qid, el, steps, step, deadline, instant}
  let ticker = 0;

  // -- what was picked, kept per question so a reload restores it ----------------------
  const storeKey = (qid) => `askgate:${qid}`;
  function save() {
    if (!panel) return;
    const picks = panel.steps.map((s) => ({
      on: [...s.querySelectorAll(".opt[aria-pressed=true]")].map((b) => b.dataset.label),
      other: s.querySelector(".other input").value,
    }));
    try {
      sessionStorage.setItem(storeKey(panel.qid),
        JSON.stringify({ picks, step: panel.step, collapsed: panel.el.hidden }));
    } catch (_) { /* private mode: picks live as long as the page */ }
  }
  function restore() {
    let saved = null;
    try { saved = JSON.parse(sessionStorage.getItem(storeKey(panel.qid)) || "null"); } catch (_) {}
    if (!saved) return { step: 0, collapsed: false };
    panel.steps.forEach((s, i) => {
      const p = saved.picks[i];
      if (!p) return;
      s.querySelectorAll(".opt").forEach((b) => b.setAttribute("aria-pressed", String(p.on.includes(b.dataset.label))));
      s.querySelector(".other input").value = p.other || "";
    });
    return { step: Math.min(saved.step || 0, panel.steps.length - 1), collapsed: !!saved.collapsed };
  }

  function answers() {
    const out = {};
    for (const s of panel.steps) {
      const values = [...s.querySelectorAll(".opt[aria-pressed=true]")].map((b) => b.dataset.label);
      const other = s.querySelector(".other input").value.trim();
      if (other) values.push(other);
      out[s.dataset.id] = values;
    }
    return out;
  }

  // -- the panel ------------------------------------------------------------------------
  function show(i, focus) {
    panel.step = i;
    panel.steps.forEach((s, j) => { s.hidden = j !== i; });
    const back = panel.el.querySelector("[data-act=back]"), next = panel.el.querySelector("[data-act=next]");
    if (back) back.hidden = i === 0;
    if (next) next.hidden = i === panel.steps.length - 1;
    if (focus) {
      const s = panel.steps[i];
      (s.querySelector(".opt[aria-pressed=true]") || s.querySelector(".opt")).focus();
    }
    save();
  }

  function setCollapsed(collapsed, focus) {
    panel.el.hidden = collapsed;
    $("qbar").hidden = !collapsed;
    composer.hidden = !collapsed;
    if (focus) (collapsed ? $("composer-text") : panel.steps[panel.step].querySelector(".opt")).focus();
    save();
  }

  function pick(button) {
    const step = button.closest(".q");
    if (step.dataset.multi === "1") {
      button.setAttribute("aria-pressed", String(button.getAttribute("aria-pressed") !== "true"));
    } else {
      step.querySelectorAll(".opt").forEach((b) => b.setAttribute("aria-pressed", String(b === button)));
      step.querySelector(".other input").value = "";
    }
    step.querySelector(".missing").hidden = true;
    save();
    if (panel.instant) submit();
  }

  function typed(input) {
    const step = input.closest(".q");
    // A single-select question takes one answer: own words replace the picked option.
    if (step.dataset.multi !== "1" && input.value.trim()) {
      step.querySelectorAll(".opt").forEach((b) => b.setAttribute("aria-pressed", "false"));
    }
    if (input.value.trim()) step.querySelector(".missing").hidden = true;
    save();
  }

  function tick() {
    if (!panel) return;
    const left = Math.max(0, Math.round((panel.deadline - performance.now()) / 1000));
    const h = Math.floor(left / 3600), m = Math.floor((left % 3600) / 60), s = left % 60;
    const text = (h ? `${h}:${String(m).padStart(2, "0")}` : String(m)) + ":" + String(s).padStart(2, "0");
    slot.querySelectorAll(".clock").forEach((c) => { c.textContent = text; });
  }

  function setup() {
    clearInterval(ticker);
    const el = $("panel");
    if (!el) {
      panel = null;
      composer.hidden = false;
      return;
    }
    panel = {
      qid: el.dataset.qid, el, step: 0, instant: el.dataset.instant === "1",
      steps: [...el.querySelectorAll(".q")],
      deadline: performance.now() + Number(el.dataset.remainingMs),
    };
    const saved = restore();
    show(saved.step, false);
    setCollapsed(saved.collapsed, false);
    tick();
    ticker = setInterval(tick, 1000);
  }

  // -- talking to the server ------------------------------------------------------------
  async function post(path, data) {
    setBusy(true);
    try {
      const r = await fetch(url(path), {
        method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(data),
      });
      const reply = await r.json().catch(() => ({}));
      alertBox.textContent = reply.message || "";
      if (reply.view) apply(reply.view);
      return r.ok;
    } catch (_) {
      alertBox.textContent = conn.textContent;
      return false;
    } finally {
      setBusy(false);
    }
  }
  function setBusy(busy) {
    slot.querySelectorAll(".actions button, .opt").forEach((b) => { b.disabled = busy; });
  }

  function submit() {
    const given = answers();
    const missing = panel.steps.findIndex((s) => given[s.dataset.id].length === 0);
    if (missing >= 0) {
      show(missing, true);
      panel.steps[missing].querySelector(".missing").hidden = false;
      return;
    }
    post("answer", { question_id: panel.qid, answers: given });
  }

  function apply(view) {
    if (view.locale !== body.dataset.locale) { location.reload(); return; }
    const atBottom = timeline.parentElement.scrollHeight - timeline.parentElement.scrollTop
      - timeline.parentElement.clientHeight < 40;
    timeline.innerHTML = view.timeline;
    if (atBottom) timeline.parentElement.scrollTop = timeline.parentElement.scrollHeight;
    const shown = panel ? panel.qid : null;
    if (view.pending === shown) return; // same question: keep what was picked
    const hadFocus = panel && panel.el.contains(document.activeElement);
    slot.innerHTML = view.panel;
    setup();
    if (shown) {
      try { sessionStorage.removeItem(storeKey(shown)); } catch (_) {}
      const entry = timeline.querySelector(`[data-qid="${shown}"] .summary`);
      notice.textContent = entry ? entry.textContent : "";
      if (hadFocus) $("composer-text").focus();
    }
    if (panel) notice.textContent = "";
  }

  let refreshing = false, again = false;
  async function refresh() {
    if (refreshing) { again = true; return; }
    refreshing = true;
    try {
      do {
        again = false;
        const r = await fetch(url("view"), { cache: "no-store" });
        if (r.ok) apply(await r.json());
      } while (again);
    } catch (_) {
      /* the event stream reconnects and asks again */
    } finally {
      refreshing = false;
    }
  }

  function listen() {
    const events = new EventSource(url("events"));
    // Sent on every (re)connect: whatever happened while disconnected is read afresh.
    events.addEventListener("hello", () => { conn.hidden = true; refresh(); });
    events.addEventListener("change", refresh);
    events.addEventListener("error", () => { conn.hidden = false; });
  }

  // -- wiring -----------------------------------------------------------------------------
  slot.addEventListener("click", (ev) => {
    if (!panel) return;
    const target = ev.target.closest("button");
    if (!target || target.disabled) return;
    if (target.classList.contains("opt")) return pick(target);
    switch (target.dataset.act) {
      case "back": return show(Math.max(0, panel.step - 1), true);
      case "next": return show(Math.min(panel.steps.length - 1, panel.step + 1), true);
      case "submit": return submit();
      case "skip": return post("skip", { question_id: panel.qid });
      case "collapse": return setCollapsed(true, true);
      case "expand": return setCollapsed(false, true);
    }
  });
  slot.addEventListener("input", (ev) => { if (panel && ev.target.matches(".other input")) typed(ev.target); });
  slot.addEventListener("keydown", (ev) => {
    if (!panel) return;
    if (ev.key === "Escape" && !panel.el.hidden) { ev.preventDefault(); setCollapsed(true, true); }
    if (ev.key === "Enter" && ev.target.matches(".other input")) {
      ev.preventDefault();
      if (panel.step < panel.steps.length - 1) show(panel.step + 1, true); else submit();
    }
  });
  composer.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const box = $("composer-text");
    const text = box.value.trim();
    if (!text) return;
    if (await post("reply", { text })) box.value = "";
  });
  $("composer-text").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); composer.requestSubmit(); }
  });

  setup();
  timeline.parentElement.scrollTop = timeline.parentElement.scrollHeight; // newest last
  listen();
})();
