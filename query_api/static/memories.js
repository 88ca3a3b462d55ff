// Memories: a search box that runs a recall, and the tenant's memories (GET /v1/memories)
// filtered, in keyset pages ("Load more" follows next_cursor), growing live: every
// POLL_MS the first page is read again and only memories not shown yet are inserted
// (rows already on the page are updated in place, never re-rendered).
"use strict";

const MEM_PAGE = 50;
const HEAD_PAGE = 20;
const POLL_MS = 2000;
const MAX_EMPTY_PAGES = 10;  // a text filter may answer empty pages with a cursor

const Mem = { seen: new Map(), cursor: null, filters: {}, timer: null, token: 0, busy: false };

function memFilters() {
  const form = document.getElementById("mem-filters");
  const out = {};
  for (const name of ["project", "thread", "status", "tier", "tag", "text", "sort"]) {
    const value = form.elements[name].value.trim();
    if (value) out[name] = value;
  }
  return out;
}

function memRow(m) {
  const r = m.source_range;
  const row = el("tr", { dataset: { id: m.id } },
    el("td", { className: "nowrap" }, when(m.created_at)),
    el("td", { className: "badges" }, statusBadges(m)),
    el("td", { className: "num hits" }, String(m.hit_count ?? 0)),
    el("td", {}, threadLink(r.thread_id, r.start_index, r.end_index)),
    el("td", { className: "summary-cell" }, summaryLink(m.id, m.summary)));
  return row;
}

function updateRow(row, m) {
  const badges = row.querySelector(".badges");
  const hits = row.querySelector(".hits");
  const fresh = statusBadges(m);
  if (badges.textContent !== fresh.textContent) badges.replaceChildren(fresh);
  if (hits.textContent !== String(m.hit_count ?? 0)) hits.textContent = String(m.hit_count ?? 0);
}

// The empty list says whose it is: a tenant with nothing, or filters that match nothing.
function emptyLine() {
  const filtered = Object.keys(Mem.filters).some((k) => k !== "sort");
  return filtered ? `No memory of tenant ${currentTenant()} matches these filters.`
    : `Tenant ${currentTenant()} holds nothing yet.`;
}

// A forgotten memory leaves the list and the last search's answer.
function memoryGone(id) {
  const row = Mem.seen.get(id);
  if (row) { row.remove(); Mem.seen.delete(id); memCount(); }
  const hit = document.querySelector(`#recall-results tbody tr[data-id="${CSS.escape(id)}"]`);
  if (hit) hit.remove();
  if (Page.recall) {
    Page.recall.memories = Page.recall.memories.filter((m) => m.id !== id);
    Page.recall.evidence = Page.recall.evidence.filter((e) => e.memory_id !== id);
  }
}

function clearSearch() {
  blank(["recall-results", "recall-status", "recall-facts"], ["recall-results"]);
}

function memCount() {
  say("mem-count", `${Mem.seen.size} shown${Mem.cursor ? " · more below" : ""}`);
}

async function memLoad(reset) {
  const tbody = document.getElementById("mem-list").tBodies[0];
  if (reset) {
    Mem.token += 1;
    Mem.seen.clear();
    Mem.cursor = null;
    Mem.filters = memFilters();
    tbody.replaceChildren();
  }
  const token = Mem.token;
  if (!currentTenant()) {
    say("mem-status", "Choose a tenant (user_id) above to list its memories.", "error");
    return;
  }
  say("mem-status", "loading…");
  try {
    let added = 0;
    for (let i = 0; i < MAX_EMPTY_PAGES && !added; i += 1) {
      const query = { ...Mem.filters, limit: MEM_PAGE, cursor: Mem.cursor };
      const page = await api("GET", "v1/memories", { query });
      if (token !== Mem.token) return;
      for (const m of page.memories) {
        if (Mem.seen.has(m.id)) continue;
        const row = memRow(m);
        Mem.seen.set(m.id, row);
        tbody.append(row);
        added += 1;
      }
      Mem.cursor = page.next_cursor;
      if (!Mem.cursor) break;
    }
    say("mem-status", Mem.seen.size ? "" : emptyLine());
  } catch (err) {
    if (token === Mem.token) sayError("mem-status", err, "list memories");
  }
  document.getElementById("mem-more").hidden = !Mem.cursor;
  memCount();
}

// Live: the first page again; memories not shown yet go in at their place among it.
async function memPoll() {
  if (Mem.busy || document.hidden || !document.getElementById("mem-live").checked) return;
  if (!currentTenant() || !Mem.seen.size && Mem.cursor) return;
  Mem.busy = true;
  const token = Mem.token;
  try {
    const page = await api("GET", "v1/memories", { query: { ...Mem.filters, limit: HEAD_PAGE } });
    if (token !== Mem.token) return;
    const tbody = document.getElementById("mem-list").tBodies[0];
    let anchor = null;
    let added = 0;
    for (const m of page.memories) {
      const known = Mem.seen.get(m.id);
      if (known) { updateRow(known, m); anchor = known; continue; }
      const row = memRow(m);
      row.className = "fresh";
      if (anchor) anchor.after(row); else tbody.prepend(row);
      Mem.seen.set(m.id, row);
      anchor = row;
      added += 1;
    }
    if (added) { say("mem-status", ""); memCount(); }
    document.body.dataset.memPolls = String(Number(document.body.dataset.memPolls || 0) + 1);
  } catch (err) {
    if (token === Mem.token) sayError("mem-status", err, "list memories");
  } finally {
    Mem.busy = false;
  }
}

// ---------------------------------------------------------------- recall search
// The line that answers, verbatim (the first extracted line), and how many more.
function answerLine(ev) {
  if (!ev || !ev.lines.length) {
    return el("span", { className: "muted", title: "no line was extracted from this memory" }, "–");
  }
  const first = ev.lines[0];
  const more = ev.lines.length - 1;
  return el("span", { title: ev.lines.map((l) => `[${l.event_index}] ${l.text}`).join("\n") },
    el("code", { className: "line" }, first.text), " ",
    el("span", { className: "muted" }, `event ${first.event_index}` +
       (more ? ` · +${more} line(s)` : "")));
}

async function runRecall(event) {
  event.preventDefault();
  const query = document.getElementById("recall-query").value.trim();
  const table = document.getElementById("recall-results");
  if (!query) return;
  if (!currentTenant()) { say("recall-status", "Choose a tenant first.", "error"); return; }
  // read_only: looking is no use (no hit, no TTL touch, no promotion; issue 47)
  const body = { query, project_id: Mem.filters.project || null, read_only: true };
  if (Mem.filters.thread) body.thread_id = Mem.filters.thread;
  if (Mem.filters.tag) body.tags = [Mem.filters.tag];
  const tenant = currentTenant();
  clearSearch();  // the previous answer never stays above a new one
  say("recall-status", "recalling…");
  let answer;
  try {
    answer = await api("POST", "v1/recall", { body });
  } catch (err) {
    sayError("recall-status", err, "recall");
    return;
  }
  if (tenant !== currentTenant()) return;  // the tenant changed meanwhile
  Page.recall = answer;
  const tbody = table.tBodies[0];
  tbody.replaceChildren();
  const evidence = new Map(answer.evidence.map((e) => [e.memory_id, e]));
  const nothing = nothingLine(answer);
  // relevance (when the service computes it): a column; when nothing strong matches,
  // the memories are still listed, dimmed, as the closest held and no answer
  table.classList.toggle("rated", rated(answer));
  for (const m of answer.memories) {
    tbody.append(el("tr", { dataset: { id: m.id }, className: nothing ? "weak" : "" },
      el("td", { className: "num" }, m.score.toFixed(3)),
      el("td", { className: "num rel" }, relText(m.relevance)),
      el("td", { className: "summary-cell" }, summaryLink(m.id, m.summary)),
      el("td", {}, statusBadges(m)),
      el("td", { className: "answer" }, answerLine(evidence.get(m.id)))));
  }
  table.hidden = !answer.memories.length;
  factsFor(query, "recall-facts");  // fact.js: the history of a key the question names
  if (!answer.memories.length) {
    say("recall-status", nothing || `Tenant ${tenant} holds no memory that answers this.`,
        nothing ? "warn" : "");
    return;
  }
  if (nothing) {
    say("recall-status", `${nothing} The closest memories are listed, dimmed.`, "warn");
    return;
  }
  const rel = relevanceNote(answer);
  say("recall-status", `${answer.classification} · level ${answer.level} · ` +
      (rel ? `${rel} · ` : "") +
      `${answer.memories.length} memories · ${answer.evidence.length} evidence · ` +
      `${answer.latency_ms.toFixed(1)} ms — ${answer.decision_reason}`);
}

VIEWS.memories = {
  enter() {
    memLoad(true);
    clearInterval(Mem.timer);
    Mem.timer = setInterval(memPoll, POLL_MS);
  },
  leave() { clearInterval(Mem.timer); },
  clear() {
    clearSearch();
    Mem.token += 1;
    Mem.seen.clear();
    Mem.cursor = null;
    blank(["mem-list", "mem-status", "mem-count"], ["mem-more"]);
  },
};

document.getElementById("mem-filters").addEventListener("submit", (e) => {
  e.preventDefault();
  memLoad(true);
});
document.getElementById("mem-filters").addEventListener("change", (e) => {
  if (e.target.tagName === "SELECT") memLoad(true);
});
document.getElementById("mem-more").addEventListener("click", () => memLoad(false));
document.getElementById("recall-form").addEventListener("submit", runRecall);
