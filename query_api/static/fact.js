// A fact's history (issue 47): every value one key (env:DB_PORT, REDIS_URL …) took in the
// tenant's memories, oldest first — when it was said, in which thread and event, which
// value is current — and the supersession between them (GET /v1/facts/history). Reached
// from a memory's exact values and from the search box (keys the question names).
"use strict";

const Fact = { token: 0 };

function factLink(key, text) {
  return el("a", { href: `#/fact/${enc(key)}`, className: "fact-link", title: `history of ${key}` },
            text || key);
}

function factItem(v, change) {
  const where = el("span", {}, threadLink(v.thread_id), v.event_index === null ? ""
    : el("a", { href: `#/thread/${enc(v.thread_id)}`, className: "muted" }, ` · event ${v.event_index}`));
  return el("li", { className: `fact-step ${v.current ? "current" : "superseded"}`,
                    dataset: { value: v.value, current: String(v.current) } },
    el("div", { className: "fact-when muted" }, when(v.ts)),
    el("div", { className: "fact-body" },
      el("div", {}, el("code", { className: "fact-value" }, v.value), " ",
         el("span", { className: `pill ${v.current ? "status-active" : "status-superseded"}` },
            v.current ? "current" : "superseded")),
      el("div", { className: "muted" }, "said in thread ", where),
      el("div", {}, "memory ", memoryLink(v.memory_id, (summaryParts(v.summary)[0] || {}).text)),
      change ? el("div", { className: "fact-change muted" },
        `superseded by ${change.to_value} on ${when(change.at)}` +
        (change.linked ? " (the newer memory names this one)" : "")) : null));
}

async function openFact(key) {
  Fact.token += 1;
  const token = Fact.token;
  blank(["f-list", "f-current"]);
  say("f-key", key);
  say("f-status", "loading…");
  let data;
  try {
    data = await api("GET", "v1/facts/history", { query: { key } });
  } catch (err) {
    if (token !== Fact.token) return;
    if (err instanceof CallError && err.status === 404) {
      say("f-status", `Tenant ${currentTenant()} never held a value for ${key} (404).`, "error");
    } else {
      sayError("f-status", err, "read this fact's history");
    }
    return;
  }
  if (token !== Fact.token) return;
  const changes = new Map(data.supersessions.map((c) => [c.from, c]));
  document.getElementById("f-list").replaceChildren(
    ...data.values.map((v) => factItem(v, v.current ? null : changes.get(v.memory_id))));
  const threads = new Set(data.values.map((v) => v.thread_id)).size;
  say("f-current", data.current ? `now ${data.current.value}` : "no current value");
  say("f-status", `${data.values.length} value(s) in ${threads} thread(s), ` +
      `${data.supersessions.length} change(s), oldest first.`);
  document.body.dataset.factLoaded = key;
}

// The keys a question names (DB_PORT in "which DB_PORT …"), as links under the search.
async function factsFor(query, targetId) {
  const target = document.getElementById(targetId);
  target.replaceChildren();
  const words = [...new Set(query.match(/[A-Za-z][A-Za-z0-9]*(?:[_.-][A-Za-z0-9]+)+|[A-Z]{3,}/g) || [])];
  const found = [];
  for (const word of words.slice(0, 5)) {
    try {
      const answer = await api("GET", "v1/facts", { query: { q: word, limit: 5 } });
      found.push(...answer.facts);
    } catch (err) {
      return;  // the search itself says what went wrong
    }
  }
  if (!found.length) return;
  target.replaceChildren("History of ", ...found.flatMap((f, i) => [
    i ? ", " : "", factLink(f.key), el("span", { className: "muted" }, ` (${f.values} values, now ${f.current ?? "–"})`)]));
}

VIEWS.fact = {
  enter(key) {
    if (!key) { blank(["f-list", "f-current", "f-key"]); say("f-status", "Open a fact from a memory's exact values or from a search."); return; }
    openFact(key);
  },
  clear() { Fact.token += 1; blank(["f-list", "f-current", "f-key", "f-status"]); },
};
