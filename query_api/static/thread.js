// Threads: the tenant's threads (GET /v1/threads, keyset pages), and one thread's events
// in order with the windows shaded: the ranges its memories were cut from, and the open
// window (events not yet in a memory), which updates live (THREAD_POLL_MS).
"use strict";

const THREAD_POLL_MS = 2000;
const Thr = { id: null, after: null, windows: [], open: null, pager: null, timer: null,
              token: 0, busy: false };

function threadRow(t) {
  const open = t.open_window;
  const title = el("a", { href: `#/thread/${enc(t.thread_id)}`, className: "title",
                          title: t.thread_id }, t.title || t.thread_id);
  return el("tr", { dataset: { thread: t.thread_id } },
    el("td", { className: "summary-cell" }, title,
       el("div", { className: "muted small" }, t.thread_id)),
    el("td", {}, t.project_id || "–"),
    el("td", {}, t.agent_id || "–"), el("td", { className: "num" }, String(t.event_count)),
    el("td", { className: "num" }, String(t.memories)),
    el("td", {}, open ? `${open.events} event(s) [${open.first_index}..${open.last_index}]` : "–"),
    el("td", { className: "nowrap" }, when(t.last_ts)));
}

// Latest event first, titled by the first request (GET /v1/dashboard/threads).
async function loadThreads(reset) {
  const tbody = document.getElementById("t-list").tBodies[0];
  if (reset) { Thr.after = null; tbody.replaceChildren(); }
  if (!currentTenant()) { say("t-list-status", "Choose a tenant first.", "error"); return; }
  const tenant = currentTenant();
  try {
    const page = await api("GET", "v1/dashboard/threads",
                           { query: { limit: 100, before: Thr.after } });
    if (tenant !== currentTenant()) return;
    tbody.append(...page.threads.map(threadRow));
    Thr.after = page.next_before;
    say("t-list-status", tbody.rows.length ? "" : `Tenant ${tenant} holds nothing yet.`);
  } catch (err) {
    sayError("t-list-status", err, "list threads");
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
  const token = Thr.token;
  const data = await api("GET", `v1/dashboard/threads/${enc(Thr.id)}`);
  if (token !== Thr.token) return data;
  Thr.windows = data.windows;
  Thr.open = data.open_window;
  const open = Thr.open;
  say("t-info", `${data.windows.length} window(s)` + (open
    ? ` · open window: ${open.events} event(s) [${open.first_index}..${open.last_index}] since ${when(open.since)}`
    : " · no open window"));
  return data;
}

// Nothing of a thread stays on the page once another is opened, it is not found (404),
// it was forgotten or the tenant changed.
function blankThread(message = "", kind = "") {
  Thr.token += 1;  // answers still on their way are dropped
  Thr.windows = [];
  Thr.open = null;
  Thr.pager.reset(null);
  blank(["t-id", "t-info", "t-forget", "t-head"]);
  document.getElementById("t-panel").dataset.empty = "true";
  say("t-status", message, kind);
}

async function openThread(id) {
  blankThread("loading…");
  Thr.id = id;
  const token = Thr.token;
  say("t-id", id);
  let data;
  try {
    data = await loadWindows();
  } catch (err) {
    if (token !== Thr.token) return;
    if (err instanceof CallError && err.status === 404) {
      say("t-status", `No thread ${id} in tenant ${currentTenant()} (404): it was never ` +
          "there, was forgotten, or belongs to another tenant.", "error");
      document.body.dataset.threadMissing = id;
    } else {
      sayError("t-status", err, "read this thread");
    }
    return;
  }
  if (token !== Thr.token) return;
  document.getElementById("t-panel").dataset.empty = "false";
  threadHead(data);
  Thr.pager.reset(id, 0, null, [], shade);
  const shown = await Thr.pager.next();
  if (token !== Thr.token) return;
  say("t-status", shown ? "" : "No events in this thread (archived to cold storage).");
  const events = data.event_count ?? "every";
  forgetBox("t-forget", `This erases thread ${id}: its ${events} event(s), its ` +
            `${data.windows.length} memory(ies) with their chunks and vectors, and its open ` +
            "window, for good.", { thread_id: id }, (answer) => {
    blankThread(`Thread ${id} was forgotten: erased ${answer.erased} at ${when(answer.at)}.`,
                "ok");
    say("t-id", id);
  }, `Forget thread ${id} (${events} events, ${data.windows.length} memories)…`);
  document.body.dataset.threadLoaded = id;
}

// Who and what: the first request as the title, project, agent, when.
function threadHead(data) {
  const head = document.getElementById("t-head");
  const parts = [];
  if (data.title) parts.push(el("p", { className: "summary" }, data.title));
  parts.push(el("div", { className: "muted" },
    `project ${data.project_id || "–"} · agent ${data.agent_id || "–"} · ` +
    `${data.event_count ?? 0} events · ${when(data.first_ts)} → ${when(data.last_ts)}`));
  head.replaceChildren(...parts);
}

// Live: new events appended, windows re-read, shading updated in place.
async function pollThread() {
  if (Thr.busy || document.hidden || !Thr.id || Thr.pager.thread === null) return;
  Thr.busy = true;
  const token = Thr.token;
  try {
    await loadWindows();
    if (token !== Thr.token) return;
    await Thr.pager.tail();
    for (const item of document.getElementById("t-events").children) shade(item, item.eventData);
    document.body.dataset.threadPolls = String(Number(document.body.dataset.threadPolls || 0) + 1);
  } catch (err) {
    if (token === Thr.token) sayError("t-status", err, "read this thread");
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
  clear() {
    Thr.id = null;
    blankThread();
    Thr.after = null;
    blank(["t-list", "t-list-status"], ["t-list-more"]);
  },
};

Thr.pager = new EventPager("t-events", "t-more", "t-status");
document.getElementById("t-list-more").addEventListener("click", () => loadThreads(false));
