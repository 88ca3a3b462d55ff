// Threads: the tenant's threads (GET /v1/threads, keyset pages), and one thread's events
// in order with the windows shaded: the ranges its memories were cut from, and the open
// window (events not yet in a memory), which updates live (THREAD_POLL_MS).
"use strict";

const THREAD_POLL_MS = 2000;
const Thr = { id: null, after: null, windows: [], open: null, pager: null, timer: null,
              token: 0, busy: false };

function threadRow(t) {
  const open = t.open_window;
  return el("tr", { dataset: { thread: t.thread_id } },
    el("td", {}, threadLink(t.thread_id)), el("td", {}, t.project_id || "–"),
    el("td", {}, t.agent_id || "–"), el("td", { className: "num" }, String(t.event_count)),
    el("td", { className: "num" }, String(t.memories)),
    el("td", {}, open ? `${open.events} event(s) [${open.first_index}..${open.last_index}]` : "–"),
    el("td", { className: "nowrap" }, when(t.last_ts)));
}

async function loadThreads(reset) {
  const tbody = document.getElementById("t-list").tBodies[0];
  if (reset) { Thr.after = null; tbody.replaceChildren(); }
  if (!currentTenant()) { say("t-list-status", "Choose a tenant first.", "error"); return; }
  try {
    const page = await api("GET", "v1/threads", { query: { limit: 100, after: Thr.after } });
    tbody.append(...page.threads.map(threadRow));
    Thr.after = page.next_after;
    say("t-list-status", tbody.rows.length ? "" : "No threads yet.");
  } catch (err) {
    say("t-list-status", describe(err, "list threads"), "error");
  }
  document.getElementById("t-list-more").hidden = !Thr.after;
}

// Shade one event: inside a memory's range, inside the open window, or neither.
function shade(item, ev) {
  const win = Thr.windows.find((w) => ev.index >= w.start_index && ev.index <= w.end_index);
  const open = Thr.open && ev.index >= Thr.open.first_index && ev.index <= Thr.open.last_index;
  item.classList.toggle("in-window", Boolean(win));
  item.classList.toggle("in-open", Boolean(open) && !win);
  const tag = item.querySelector(".win-tag");
  const label = win ? `memory ${shortId(win.memory_id)} [${win.start_index}..${win.end_index}]`
    : open ? "open window" : "";
  if (tag && tag.textContent === label) return;
  if (tag) tag.remove();
  if (!label) return;
  const node = win ? memoryLink(win.memory_id, label) : el("span", {}, label);
  node.classList.add("win-tag");
  item.querySelector(".ev-head").append(" ", node);
}

async function loadWindows() {
  const data = await api("GET", `v1/dashboard/threads/${enc(Thr.id)}`);
  Thr.windows = data.windows;
  Thr.open = data.open_window;
  const open = Thr.open;
  say("t-info", `${data.windows.length} window(s)` + (open
    ? ` · open window: ${open.events} event(s) [${open.first_index}..${open.last_index}] since ${when(open.since)}`
    : " · no open window"));
}

async function openThread(id) {
  Thr.id = id;
  Thr.token += 1;
  const token = Thr.token;
  say("t-id", id);
  say("t-status", "loading…");
  try {
    await loadWindows();
  } catch (err) {
    if (token === Thr.token) say("t-status", describe(err, "read this thread"), "error");
    return;
  }
  if (token !== Thr.token) return;
  Thr.pager.reset(id, 0, null, [], shade);
  const shown = await Thr.pager.next();
  say("t-status", shown ? "" : "No events in this thread (forgotten, or archived to cold storage).");
  forgetBox("t-forget", `This erases every event, memory, chunk and vector of thread ${id}, ` +
            "and its open window, for good.", { thread_id: id },
            () => say("t-status", "This thread was forgotten.", "ok"));
  document.body.dataset.threadLoaded = id;
}

// Live: new events appended, windows re-read, shading updated in place.
async function pollThread() {
  if (Thr.busy || document.hidden || !Thr.id) return;
  Thr.busy = true;
  const token = Thr.token;
  try {
    await loadWindows();
    if (token !== Thr.token) return;
    await Thr.pager.tail();
    for (const item of document.getElementById("t-events").children) shade(item, item.eventData);
    document.body.dataset.threadPolls = String(Number(document.body.dataset.threadPolls || 0) + 1);
  } catch (err) {
    if (token === Thr.token) say("t-status", describe(err, "read this thread"), "error");
  } finally {
    Thr.busy = false;
  }
}

VIEWS.thread = {
  enter(id) {
    clearInterval(Thr.timer);
    document.getElementById("t-panel").hidden = !id;
    document.getElementById("t-list-panel").hidden = Boolean(id);
    if (!id) { Thr.id = null; loadThreads(true); return; }
    openThread(id);
    Thr.timer = setInterval(pollThread, THREAD_POLL_MS);
  },
  leave() { clearInterval(Thr.timer); },
};

Thr.pager = new EventPager("t-events", "t-more", "t-status");
document.getElementById("t-list-more").addEventListener("click", () => loadThreads(false));
