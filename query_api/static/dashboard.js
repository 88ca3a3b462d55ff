// Breadcrumb live dashboard: one JSON snapshot per server-sent event, rendered in place.
// No framework, no external assets; all user text goes through textContent.
"use strict";

const STREAM_URL = "v1/dashboard/stream";
const SVG_NS = "http://www.w3.org/2000/svg";
const CHART_SLOTS = 90;  // samples shown (~1 per second)
const $ = (id) => document.getElementById(id);
const fmt = (n) => (n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"));
const fmtRate = (n) => Number(n || 0).toLocaleString("en-US", { maximumFractionDigits: 1 });
const fmtMs = (ms) => (ms === null || ms === undefined ? "–"
  : ms >= 1000 ? `${(ms / 1000).toLocaleString("en-US", { maximumFractionDigits: 1 })} s`
  : `${Math.round(ms)} ms`);
let lastRecallTotal = null;

function setText(id, value) {
  const el = $(id);
  if (el && el.textContent !== value) el.textContent = value;
}

function setConnection(state, label) {
  const el = $("conn");
  el.dataset.state = state;
  el.textContent = label;
}

function renderCards(snap) {
  const s = snap.stats;
  setText("mode", `mode ${s.mode || "?"}`);
  setText("rate-in", fmtRate(snap.rates.events_in_per_s));
  setText("rate-derived", fmtRate(snap.rates.derived_per_s));
  setText("rate-memories", fmtRate(snap.rates.memories_per_s));
  setText("events-received", fmt(s.events_received));
  setText("events-accepted", fmt(s.events_accepted));
  setText("events-processed", fmt(s.events_processed));
  setText("duplicates", fmt(s.duplicates));
  setText("pending", fmt(s.pending));
  setText("unprocessed", fmt(s.unprocessed));
  setText("consumer-lag", fmt(s.consumer_lag));
  setText("dead-letters", fmt(s.dead_letters));
  const fresh = s.freshness || {};
  setText("fresh-p50", fmtMs((fresh.recallable_ms || {}).p50));
  setText("fresh-p95", fmtMs((fresh.recallable_ms || {}).p95));
  setText("fresh-memory-p50", fmtMs((fresh.memory_ms || {}).p50));
  setText("fresh-memory-p95", fmtMs((fresh.memory_ms || {}).p95));
  $("card-dead").dataset.nonzero = String((s.dead_letters || 0) > 0);
  setText("updated", `updated ${snap.at.slice(11, 19)} UTC`);
}

function renderBars(tableId, counts) {
  const tbody = $(tableId).tBodies[0];
  const entries = Object.entries(counts || {}).sort((a, b) => b[1] - a[1]);
  const max = Math.max(1, ...entries.map((e) => e[1]));
  tbody.replaceChildren();
  if (!entries.length) {
    const row = tbody.insertRow();
    row.className = "empty";
    const cell = row.insertCell();
    cell.colSpan = 3;
    cell.className = "muted";
    cell.textContent = "No memories yet.";
    return;
  }
  for (const [key, count] of entries) {
    const row = tbody.insertRow();
    row.dataset.key = key;
    const name = row.insertCell();
    name.className = "name";
    name.textContent = key;
    const barCell = row.insertCell();
    const bar = document.createElement("div");
    bar.className = "bar";
    bar.style.width = `${(100 * count) / max}%`;
    barCell.append(bar);
    const num = row.insertCell();
    num.className = "count";
    num.textContent = fmt(count);
  }
}

function renderMemories(memories) {
  const byStatus = (memories && memories.by_status) || {};
  renderBars("memories-status", byStatus);
  renderBars("memories-tier", (memories && memories.by_tier) || {});
  const total = Object.values(byStatus).reduce((a, b) => a + b, 0);
  setText("memories-total", `${fmt(total)} total`);
}

function recallRow(tbody, r, fresh) {
  const row = tbody.insertRow();
  if (fresh) row.className = "fresh";
  row.dataset.query = r.query;  // a click opens it in the recall inspector (api.js)
  row.dataset.user = r.user_id;
  row.title = "open this recall in the inspector";
  const cells = [
    [r.at.slice(11, 19), ""], [r.user_id, ""], [r.query, "query"], [null, ""],
    [String(r.level), "num"], [`${r.latency_ms.toFixed(1)} ms`, "num"],
    [fmt(r.memories), "num"], [fmt(r.evidence), "num"],
  ];
  for (const [text, cls] of cells) {
    const cell = row.insertCell();
    cell.className = cls;
    if (text === null) {
      const badge = document.createElement("span");
      badge.className = `cls ${r.classification}`;
      badge.textContent = r.classification;
      cell.append(badge);
    } else {
      cell.textContent = text;
      if (cls === "query") cell.title = r.query;
    }
  }
}

function renderRecalls(recalls, scope) {
  setText("recalls-scope", scope ? `tenant ${scope}` : "every tenant");
  setText("recalls-total", fmt(recalls.total));
  const ms = (v) => (v === null ? "–" : `${Number(v).toFixed(1)} ms`);
  setText("latency-p50", ms(recalls.latency_ms.p50));
  setText("latency-p95", ms(recalls.latency_ms.p95));
  const mix = Object.entries(recalls.by_classification).map(([k, n]) => `${k} ${n}`).join(" · ");
  setText("recalls-mix", mix);
  if (recalls.total === lastRecallTotal || !recalls.recent.length) return;
  const fresh = lastRecallTotal === null ? 0 : recalls.total - lastRecallTotal;
  const tbody = $("recalls").tBodies[0];
  tbody.replaceChildren();
  recalls.recent.forEach((r, i) => recallRow(tbody, r, i < fresh));
  lastRecallTotal = recalls.total;
}

function svg(tag, attrs) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  return el;
}

function renderChart(history) {
  const chart = $("chart");
  const width = chart.clientWidth || 600;
  const height = chart.clientHeight || 160;
  const pad = { left: 44, right: 8, top: 8, bottom: 18 };
  chart.setAttribute("viewBox", `0 0 ${width} ${height}`);
  chart.replaceChildren();
  const points = history.slice(-CHART_SLOTS);
  const max = Math.max(1, ...points.map((p) => Math.max(p.events_in_per_s, p.derived_per_s)));
  const offset = CHART_SLOTS - points.length;  // newest sample at the right edge
  const x = (i) => pad.left + ((width - pad.left - pad.right) * (i + offset)) / (CHART_SLOTS - 1);
  const y = (v) => pad.top + (height - pad.top - pad.bottom) * (1 - v / max);
  for (const frac of [0, 0.5, 1]) {
    chart.append(svg("line", { class: "grid", x1: pad.left, x2: width - pad.right,
                               y1: y(max * frac), y2: y(max * frac) }));
    const label = svg("text", { class: "axis", x: pad.left - 6, y: y(max * frac) + 4,
                                "text-anchor": "end" });
    label.textContent = fmtRate(max * frac);
    chart.append(label);
  }
  if (points.length < 2) {
    const wait = svg("text", { class: "axis", x: width / 2, y: height / 2, "text-anchor": "middle" });
    wait.textContent = "collecting samples…";
    chart.append(wait);
    return;
  }
  const line = (key) => points.map((p, i) => `${x(i).toFixed(1)},${y(p[key]).toFixed(1)}`).join(" ");
  const base = `${x(points.length - 1).toFixed(1)},${y(0)} ${x(0).toFixed(1)},${y(0)}`;
  chart.append(svg("polygon", { class: "area in", points: `${line("events_in_per_s")} ${base}` }));
  chart.append(svg("polyline", { class: "line in", points: line("events_in_per_s") }));
  chart.append(svg("polyline", { class: "line derived", points: line("derived_per_s") }));
  setText("chart-range", `last ${points.length} samples · ${points[0].at.slice(11, 19)}–${points[points.length - 1].at.slice(11, 19)} UTC`);
}

function render(snap) {
  renderCards(snap);
  renderMemories(snap.stats.memories);
  renderRecalls(snap.recalls, snap.scope);
  noteTenants(snap.recalls.recent.map((r) => r.user_id));  // api.js: the tenant field's list
  renderChart(snap.history);
  $("error-banner").hidden = true;
  document.body.dataset.snapshots = String(Number(document.body.dataset.snapshots || 0) + 1);
}

let lastMessageAt = 0;

function notAnswering() {
  const banner = $("error-banner");
  banner.textContent = `The server at ${location.host} is not answering; retrying…`;
  banner.dataset.kind = "offline";
  banner.hidden = false;
}

function watchConnection() {
  // Streams end every few seconds by design and EventSource reconnects at once: only a
  // silence longer than a few snapshot periods is shown as a problem.
  const silent = Date.now() - lastMessageAt;
  if (lastMessageAt && silent > 4000 && $("conn").dataset.state === "live") {
    setConnection("reconnecting", "reconnecting…");
    notAnswering();
  }
}

// The stream is back after a silence or an error: the lines of calls that got no answer
// are cleared and the open view reads its data again.
function backOnline() {
  for (const node of document.querySelectorAll('[data-kind="offline"]')) {
    node.textContent = "";
    node.dataset.kind = "";
  }
  if (typeof route === "function" && document.body.dataset.ready === "true") route();
  document.body.dataset.reconnects = String(Number(document.body.dataset.reconnects || 0) + 1);
}

function onSnapshot(data) {
  const was = $("conn").dataset.state;
  lastMessageAt = Date.now();
  setConnection("live", "live");
  render(JSON.parse(data));
  if (was === "reconnecting" || was === "error") backOnline();
}

function onStatsError(data) {  // a server-sent error frame: the stats could not be read
  const body = JSON.parse(data);
  const banner = $("error-banner");
  banner.textContent = `Stats unavailable: ${body.error} (errors so far: ${body.stats_errors})`;
  banner.hidden = false;
  setConnection("error", "stats error");
}

function needKey(status) {
  const banner = $("error-banner");
  banner.textContent = status === 401
    ? "This server needs an API key: open /dashboard#key=<your key>"
    : `The key was refused (${status})`;
  banner.hidden = false;
  setConnection("error", "no key");
}

function handleFrame(frame) {
  let event = "message";
  const data = [];
  for (const line of frame.split("\n")) {
    if (line.startsWith("event:")) event = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
  }
  if (!data.length) return;
  if (event === "error") onStatsError(data.join("\n"));
  else onSnapshot(data.join("\n"));
}

async function streamWithKey(key) {
  try {
    const resp = await fetch(STREAM_URL, { headers: { Authorization: `Bearer ${key}` } });
    if (resp.status === 401 || resp.status === 403) {
      sessionStorage.removeItem(KEY_STORE);
      needKey(resp.status);
      return;
    }
    const reader = resp.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        handleFrame(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
      }
    }
  } catch (err) {
    setConnection("reconnecting", "reconnecting…");
    notAnswering();
  }
  setTimeout(() => streamWithKey(key), 1000);  // streams end by design: reconnect
}

function connect() {
  const key = apiKey();
  if (key) {
    streamWithKey(key);
    return;
  }
  const source = new EventSource(STREAM_URL);
  source.onmessage = (msg) => onSnapshot(msg.data);
  source.addEventListener("error", (msg) => {
    if (msg.data) {
      onStatsError(msg.data);
    } else if (source.readyState === EventSource.CLOSED) {  // refused: EventSource gave up
      source.close();
      fetch(STREAM_URL + "?limit=1").then((r) => {
        if (r.status === 401 || r.status === 403) needKey(r.status);
        else setTimeout(connect, 3000);
      }, () => setTimeout(connect, 3000));
      setConnection("reconnecting", "reconnecting…");
    }  // else the stream ended: EventSource reconnects by itself (see watchConnection)
  });
}

$("recalls").addEventListener("click", (e) => {
  const row = e.target.closest("tr[data-query]");
  if (row && typeof inspectRecall === "function") inspectRecall(row.dataset.query, row.dataset.user);
});
$("card-dead").addEventListener("click", () => { location.hash = "#/dead"; });

connect();
setInterval(watchConnection, 1000);
