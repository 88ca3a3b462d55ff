// A memory: what it says, when it is recalled, its tier and status with the sweeper's
// countdown, hits, the supersession chain, the audit log, tier / status changes with a
// reason (PATCH /v1/memories/{id}, admin keys), and its Source: the verbatim events of
// its range, paged, with the lines recall extracted marked.
"use strict";

const One = { id: null, memory: null, ttl: null, tick: null, pager: null, token: 0 };

function chips(id, values) {
  document.getElementById(id).replaceChildren(
    ...(values || []).map((v) => el("span", { className: "chip" }, v)));
}

function span(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  const d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60), r = s % 60;
  return d ? `${d}d ${h}h ${m}m ${r}s` : h ? `${h}h ${m}m ${r}s` : `${m}m ${r}s`;
}

function showTtl() {
  const node = document.getElementById("m-ttl");
  const life = One.ttl;
  if (!life || !life.next) {
    node.textContent = life && life.enabled === false ? "(no lifecycle sweeper)" : "";
    return;
  }
  const left = (Date.parse(life.next.at) - Date.now()) / 1000;
  const verb = life.next.action === "delete" ? "deleted" : `${life.next.action}d → ${life.next.to}`;
  node.textContent = left > 0 ? `${verb} in ${span(left)} if unused`
    : `${verb} at the next sweep (due ${when(life.next.at)})`;
  node.title = `rule ${life.next.rule}; last touched ${when(life.touched_at)}`;
}

function showMemory(m) {
  One.memory = m;
  const r = m.source_range;
  say("m-id", m.id);
  document.getElementById("m-summary").replaceChildren(summaryNode(m.summary));
  document.getElementById("m-summary").title = m.summary;  // the stored text, as it is
  document.getElementById("m-badges").replaceChildren(statusBadges(m));
  say("m-hits", `${m.hit_count ?? 0} (last used ${when(m.last_used_at)})`);
  say("m-created", `${when(m.created_at)} · updated ${when(m.updated_at)} · ${m.kind}`);
  document.getElementById("m-range").replaceChildren(
    threadLink(r.thread_id, r.start_index, r.end_index),
    ` · project ${m.project_id || "–"} · importance ${m.importance}`);
  document.getElementById("m-thread-link").href = `#/thread/${enc(r.thread_id)}`;
  say("m-when", m.retrieve_when || "–");
  chips("m-hints", m.query_hints);
  chips("m-tags", m.tags);
}

function showVersions(data) {
  const list = document.getElementById("m-versions");
  list.replaceChildren(...data.versions.map((v) => el("li",
    { className: v.id === One.id ? "me" : "", dataset: { id: v.id } },
    memoryLink(v.id), " ", statusBadges(v), " ", el("span", { className: "muted" },
      `${when(v.created_at)}${v.superseded_at ? ` · superseded ${when(v.superseded_at)}` : ""}`),
    summaryNode(v.summary))));
  const tbody = document.getElementById("m-facts").tBodies[0];
  tbody.replaceChildren(...data.facts.map((f) => el("tr", { dataset: { key: f.key } },
    el("td", {}, factLink(f.key, el("code", {}, f.key))),
    el("td", { className: "fact-values" }, ...f.versions.flatMap((v, i) => [
      i ? " → " : "",
      el("span", { className: `fact ${v.state}`, title: `${when(v.ts)} · ${v.memory_id}` },
         el("a", { href: `#/memory/${enc(v.memory_id)}` }, v.value), ` (${v.state})`)])))));
  if (!data.facts.length) {
    tbody.append(el("tr", { className: "empty" }, el("td", { colSpan: 2 }, "No exact values.")));
  }
}

function showAudit(rows) {
  const tbody = document.getElementById("m-audit").tBodies[0];
  tbody.replaceChildren(...rows.map((a) => el("tr", {},
    el("td", { className: "nowrap" }, when(a.at)), el("td", {}, a.actor),
    el("td", {}, a.field), el("td", {}, a.from ?? "–"), el("td", {}, a.to ?? "–"),
    el("td", {}, a.reason || ""))));
  if (!rows.length) {
    tbody.append(el("tr", { className: "empty" }, el("td", { colSpan: 6 }, "No changes yet.")));
  }
}

async function loadAudit() {
  const token = One.token;
  try {
    const data = await api("GET", `v1/memories/${enc(One.id)}/audit`);
    if (token === One.token) showAudit(data);
  } catch (err) {
    if (token === One.token) sayError("m-status", err, "read the audit log");
  }
}

async function loadVersions() {
  const token = One.token;
  try {
    const data = await api("GET", `v1/memories/${enc(One.id)}/versions`);
    if (token === One.token) showVersions(data);
  } catch (err) {
    if (token === One.token) sayError("m-status", err, "read the versions");
  }
}

async function loadLifecycle() {
  const token = One.token;
  let life = null;
  try {
    life = await api("GET", `v1/dashboard/memories/${enc(One.id)}/lifecycle`);
  } catch (err) {
    life = null;
  }
  if (token !== One.token) return;
  One.ttl = life;
  showTtl();
}

// ---------------------------------------------------------------- Source
function recallLinesFor(id) {
  const answer = Page.recall;
  const ev = answer && answer.evidence.find((e) => e.memory_id === id);
  return ev ? { query: answer.query, evidence: ev } : null;
}

function sourceInfo(evidence, budget) {
  if (!evidence) { say("src-info", ""); return; }
  const tokens = /(\d+) tokens/.exec(evidence.reason || "");
  say("src-info", `${evidence.lines.length} line(s) extracted` +
      (tokens ? ` · ${tokens[1]} of ${budget} tokens` : "") + ` · ${evidence.reason}`);
}

async function highlightFor(query) {
  const r = One.memory.source_range;
  if (!query) { One.pager.highlight([]); sourceInfo(null); return; }
  const body = { source_thread_id: r.thread_id, source_start_index: r.start_index,
                 source_end_index: r.end_index, query, max_tokens: 800 };
  try {
    const evidence = await api("POST", "v1/recall_source", { body });
    One.pager.highlight(evidence.lines);
    sourceInfo(evidence, 800);
    say("src-status", "");
  } catch (err) {
    sayError("src-status", err, "extract lines");
  }
}

async function loadSource() {
  const r = One.memory.source_range;
  const found = recallLinesFor(One.id);
  document.getElementById("src-query").value = found ? found.query : "";
  One.pager.reset(r.thread_id, r.start_index, r.end_index, found ? found.evidence.lines : []);
  sourceInfo(found && found.evidence, 800);
  say("src-status", found ? `lines extracted by the recall "${found.query}"` : "");
  await One.pager.next();
}

// ---------------------------------------------------------------- enter / change
// Nothing of a memory stays on the page once another is opened, it is not found (404),
// it was forgotten or the tenant changed: every field, table and button is emptied and
// the sections below the head are hidden (data-empty) until a memory is shown.
const MEMORY_PARTS = ["m-id", "m-summary", "m-badges", "m-ttl", "m-hits", "m-created",
  "m-range", "m-when", "m-hints", "m-tags", "m-versions", "m-facts", "m-audit", "m-forget",
  "m-change-status", "src-info", "src-status", "src-events"];

function blankMemory(message = "", kind = "") {
  One.token += 1;  // answers still on their way for the previous memory are dropped
  One.memory = null;
  One.ttl = null;
  One.pager.reset(null);
  blank(MEMORY_PARTS);
  document.getElementById("view-memory").dataset.empty = "true";
  document.getElementById("m-thread-link").href = "#/threads";
  say("m-status", message, kind);
}

function forgetLabel(m) {
  const r = m.source_range;
  const events = r.end_index - r.start_index + 1;
  const parts = summaryParts(m.summary);
  const head = parts.length ? parts[0].text : m.summary;
  const summary = head.length > 60 ? `${head.slice(0, 60)}…` : head;
  return `Forget memory “${summary}” and its ${events} source event(s)…`;
}

async function openMemory(id) {
  blankMemory("loading…");
  One.id = id;
  const token = One.token;
  let m;
  try {
    m = await api("GET", `v1/memories/${enc(id)}`);
  } catch (err) {
    if (token !== One.token) return;
    if (err instanceof CallError && err.status === 404) {
      say("m-status", `No memory ${id} in tenant ${currentTenant()} (404): it was never ` +
          "there, was forgotten, or belongs to another tenant.", "error");
      document.body.dataset.memoryMissing = id;
    } else {
      sayError("m-status", err, "read this memory");
    }
    return;
  }
  if (token !== One.token) return;
  say("m-status", "");
  document.getElementById("view-memory").dataset.empty = "false";
  showMemory(m);
  const r = m.source_range;
  forgetBox("m-forget", `This erases memory ${m.id}: its summary, chunks, vectors and ` +
            `facts, and the raw events [${r.start_index}..${r.end_index}] of thread ` +
            `${r.thread_id} it was made from, for good.`, { memory_id: id },
            (answer) => forgotten(id, answer), forgetLabel(m));
  await Promise.all([loadVersions(), loadAudit(), loadLifecycle(), loadSource()]);
  if (token === One.token) document.body.dataset.memoryLoaded = id;
}

// After an erasure nothing of the memory stays: this view, its row in the list and in the
// last search's answer.
function forgotten(id, answer) {
  blankMemory(`Memory ${id} was forgotten: erased ${answer.erased} at ${when(answer.at)}.`,
              "ok");
  memoryGone(id);
}

async function changeMemory(event) {
  event.preventDefault();
  const form = event.target;
  const body = { reason: form.elements.reason.value.trim(), actor: "dashboard" };
  if (form.elements.tier.value) body.tier = form.elements.tier.value;
  if (form.elements.status.value) body.status = form.elements.status.value;
  if (!body.tier && !body.status) {
    say("m-change-status", "Choose a tier or a status to change.", "error");
    return;
  }
  say("m-change-status", "saving…");
  try {
    const m = await api("PATCH", `v1/memories/${enc(One.id)}`, { body });
    showMemory(m);
    form.reset();
    say("m-change-status", "Saved; the audit log has the change.", "ok");
    await Promise.all([loadAudit(), loadLifecycle(), loadVersions()]);
  } catch (err) {
    sayError("m-change-status", err, "change tiers or statuses");
  }
}

VIEWS.memory = {
  enter(id) {
    clearInterval(One.tick);
    if (!id) { blankMemory("Open a memory from the Memories list."); return; }
    One.tick = setInterval(showTtl, 1000);
    openMemory(id);
  },
  leave() { clearInterval(One.tick); },
  clear() { One.id = null; blankMemory(); },
};

One.pager = new EventPager("src-events", "src-more", "src-status");
document.getElementById("m-change").addEventListener("submit", changeMemory);
document.getElementById("src-form").addEventListener("submit", (e) => {
  e.preventDefault();
  highlightFor(document.getElementById("src-query").value.trim());
});
