// Recall inspector: one question through POST /v1/recall with "explain": true, shown
// stage by stage: time per stage (timings_ms), Retrieve's candidates with their score
// parts, Decide's class and reason, the ranges Recall followed, the lines Extract cut
// against the token budget.
"use strict";

const PARTS = ["vector", "keyword", "tag", "importance", "recency", "stale_penalty", "passage"];

function showTimings(timings) {
  const stages = Object.entries(timings).filter(([k]) => k !== "total");
  const total = timings.total || stages.reduce((a, [, v]) => a + v, 0) || 1;
  const bar = document.getElementById("i-timings");
  bar.replaceChildren(...stages.map(([name, ms]) => el("div", {
    className: "stage", title: `${name}: ${ms.toFixed(2)} ms`, dataset: { stage: name },
    style: `flex: ${Math.max(ms, total / 200)} 1 0`,
  }, `${name} ${ms.toFixed(1)} ms`)));
  say("i-total", `total ${total.toFixed(1)} ms`);
}

function showCandidates(answer, ex) {
  const table = document.getElementById("i-cands");
  // relevance is given for the listed memories (the top k) when the service computes it
  const relevance = new Map(answer.memories.map((m) => [m.id, m.relevance]));
  table.classList.toggle("rated", rated(answer));
  // the score next to the memory: on a narrow window the parts scroll, the score stays
  table.tHead.replaceChildren(el("tr", {}, el("th", {}, "#"), el("th", {}, "memory"),
    el("th", { className: "num" }, "score"),
    el("th", { className: "num rel", title: "how likely the memory answers the question " +
               "(0..1; given for the listed memories)" }, "relevance"),
    ...PARTS.map((p) => el("th", { className: "num" }, p.replace("_", " "))),
    el("th", {}, "")));
  table.tBodies[0].replaceChildren(...ex.candidates.map((c, i) => {
    const row = el("tr", { className: c.top ? "top-k" : "", dataset: { id: c.id } },
      el("td", { className: "num" }, String(i + 1)),
      el("td", { className: "summary-cell" }, summaryLink(c.id, c.summary), " ", statusBadges(c)),
      el("td", { className: "num" }, el("b", {}, c.score.toFixed(3))),
      el("td", { className: "num rel" }, relText(relevance.get(c.id))),
      ...PARTS.map((p) => {
        const v = c.score_parts[p] || 0;
        return el("td", { className: `part${v ? "" : " zero"}` },
                  (p === "stale_penalty" && v ? "−" : "") + v.toFixed(3));
      }),
      el("td", {}, c.followed ? "followed" : c.top ? `top ${ex.k}` : ""));
    return row;
  }));
}

function showRanges(ex) {
  const tbody = document.getElementById("i-ranges").tBodies[0];
  const rows = ex.recall.ranges.map((r) => el("tr", {},
    el("td", {}, memoryLink(r.memory_id)), el("td", {}, threadLink(r.thread_id)),
    el("td", {}, `[${r.start_index}..${r.end_index}]`),
    el("td", { className: "num" }, String(r.chunk_hits))));
  rows.push(...ex.recall.open_windows.map((w) => el("tr", {},
    el("td", { className: "muted" }, "open window"), el("td", {}, threadLink(w.thread_id)),
    el("td", {}, `[${w.start_index}..${w.end_index}]`),
    el("td", { className: "num" }, `${w.events} events`))));
  if (!rows.length) {
    rows.push(el("tr", { className: "empty" }, el("td", { colSpan: 4 },
      ex.recall.follow ? "No range followed." : "No range followed: the summaries answer.")));
  }
  tbody.replaceChildren(...rows);
}

function showEvidence(answer, ex) {
  const budget = ex.extract.max_tokens;
  const used = ex.extract.tokens;
  say("i-budget-used", `${used} of ${budget} tokens · level ${ex.extract.level}`);
  document.getElementById("i-meter").style.width = `${Math.min(100, (100 * used) / budget)}%`;
  const box = document.getElementById("i-evidence");
  box.replaceChildren(...answer.evidence.map((e, i) => {
    const per = ex.extract.per_range[i] || { tokens: 0 };
    return el("div", { className: "evidence", dataset: { memory: e.memory_id || "" } },
      el("div", {}, e.memory_id ? memoryLink(e.memory_id) : "open window", " · ",
         threadLink(e.source_thread_id, e.source_start_index, e.source_end_index),
         el("span", { className: "muted" }, ` · ${e.lines.length} line(s), ${per.tokens} tokens · ${e.reason}`)),
      el("pre", {}, e.lines.map((l) => `[${l.event_index}] ${l.text}`).join("\n")));
  }));
  if (!answer.evidence.length) {
    box.append(el("p", { className: "muted" }, nothingLine(answer) || "No lines extracted."));
  }
}

async function inspect(event) {
  event.preventDefault();
  const query = document.getElementById("i-query").value.trim();
  if (!query) return;
  const body = {
    query, explain: true, read_only: true, mode: document.getElementById("i-mode").value,
    k: Number(document.getElementById("i-k").value) || 5,
    max_tokens: Number(document.getElementById("i-budget").value) || 800,
  };
  const tenant = currentTenant();
  VIEWS.inspect.clear();  // the previous answer never stays under a new question
  say("i-status", "recalling…");
  let answer;
  try {
    answer = await api("POST", "v1/recall", { body });
  } catch (err) {
    sayError("i-status", err, "recall");
    return;
  }
  if (tenant !== currentTenant()) return;  // the tenant changed meanwhile
  Page.recall = answer;  // "A memory" then marks these lines in its Source
  const ex = answer.explain;
  showTimings(answer.timings_ms);
  showCandidates(answer, ex);
  const decide = document.getElementById("i-decide");
  const rel = relevanceNote(answer);
  decide.replaceChildren(el("span", { className: `cls ${answer.classification}` },
    answer.classification), ` level ${answer.level} · ${rel ? `${rel} · ` : ""}` +
    answer.decision_reason);
  showRanges(ex);
  showEvidence(answer, ex);
  const nothing = nothingLine(answer);
  say("i-status", (nothing ? `${nothing} ` : "") +
      `${ex.candidates_total} candidate(s), top ${ex.k} listed · ` +
      `${answer.token_cost} tokens in the answer`, nothing ? "warn" : "");
  document.getElementById("i-out").hidden = false;
  document.body.dataset.inspected = String(Number(document.body.dataset.inspected || 0) + 1);
}

// A recent recall of the live view, opened here (#/inspect/<question>): in its tenant
// when the caller may choose (an admin or no keys), then run as a look.
function inspectRecall(query, user) {
  const field = document.getElementById("tenant");
  if (user && user !== currentTenant() && !field.readOnly) {
    field.value = user;
    sessionStorage.setItem(TENANT_STORE, user);
    Page.recall = null;
    for (const view of Object.values(VIEWS)) if (view.clear) view.clear();
  }
  location.hash = `#/inspect/${enc(query)}`;
}

VIEWS.inspect = {
  enter(query) {
    const field = document.getElementById("i-query");
    if (query && query !== field.value) {
      field.value = query;
      document.getElementById("i-form").requestSubmit();
    }
    field.focus();
  },
  clear() {
    document.getElementById("i-out").hidden = true;
    blank(["i-status", "i-timings", "i-total", "i-cands", "i-decide", "i-ranges",
           "i-budget-used", "i-evidence"]);
  },
};
document.getElementById("i-form").addEventListener("submit", inspect);
