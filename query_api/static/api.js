// Shared by the dashboard's views: the API key, the tenant, JSON calls, the router, DOM
// helpers. Loaded first; no framework, no external assets; user text goes through
// textContent only (el() never parses HTML).
"use strict";

// A server with API keys: the key comes once in the address (#key=bc_…), is kept for this
// tab only (sessionStorage) and removed from the address bar. EventSource cannot send an
// Authorization header, so the live stream is then read with fetch() (dashboard.js).
const KEY_STORE = "breadcrumb-api-key";
const TENANT_STORE = "breadcrumb-tenant";
const VIEWS = {};  // name -> {enter(arg), leave()} (registered by each view's file)
const Page = { who: null, view: null, recall: null };  // recall: the last search's answer

function apiKey() {
  const found = /(?:^#|&)key=([^&]+)/.exec(location.hash);
  if (found) {
    sessionStorage.setItem(KEY_STORE, decodeURIComponent(found[1]));
    history.replaceState(null, "", location.pathname + location.search);
  }
  return sessionStorage.getItem(KEY_STORE);
}

class CallError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// One JSON call. `query` values that are "" or null are left out; the tenant is added
// as user_id unless `tenant: false`.
async function api(method, path, { query = {}, body = null, tenant = true } = {}) {
  if (tenant && !currentTenant()) {
    throw new CallError(0, "no_tenant", "choose a tenant (user_id) in the bar above first");
  }
  const params = new URLSearchParams();
  const all = tenant ? { user_id: currentTenant(), ...query } : query;
  for (const [k, v] of Object.entries(all)) {
    if (v !== "" && v !== null && v !== undefined) params.set(k, String(v));
  }
  const headers = {};
  const key = sessionStorage.getItem(KEY_STORE);
  if (key) headers.Authorization = `Bearer ${key}`;
  let payload;
  if (body !== null) {
    headers["Content-Type"] = "application/json";
    payload = JSON.stringify(tenant ? { user_id: currentTenant(), ...body } : body);
  }
  const qs = params.toString();
  const resp = await fetch(path + (qs ? `?${qs}` : ""), { method, headers, body: payload });
  let data = null;
  try { data = await resp.json(); } catch (err) { data = null; }
  if (!resp.ok) {
    const e = (data && data.error) || {};
    throw new CallError(resp.status, e.code || "", e.message || resp.statusText);
  }
  return data;
}

const enc = encodeURIComponent;

// A call that never got an answer (the server stopped, the network is down): not a
// CallError. Its line says which server is not answering and is cleared once the live
// stream is back (dashboard.js: backOnline).
const offline = (err) => !(err instanceof CallError);

// What a failed call means for the person looking at the page (one line).
function describe(err, doing) {
  if (offline(err)) {
    return `The server at ${location.host} is not answering (${doing}: ${err.message}); ` +
      "this clears when it is back.";
  }
  if (err.code === "no_tenant") return `To ${doing}, ${err.message}.`;
  const role = Page.who && Page.who.role;
  if (err.status === 403 && err.code === "forbidden") {
    return `Not allowed: your ${role || "current"} key may not ${doing} (403). ${err.message}`;
  }
  if (err.status === 403) return `Not allowed (403): ${err.message}`;
  if (err.status === 401) return "This server needs an API key: open /dashboard#key=<your key>";
  if (err.status === 404) return `Not found (404): ${err.message}`;
  return `${doing} failed (${err.status}): ${err.message}`;
}

function say(id, text, kind = "") {
  const node = document.getElementById(id);
  node.textContent = text;
  node.dataset.kind = kind;
}

// A failed call's line in `id`: "offline" (cleared on reconnect) or "error".
function sayError(id, err, doing) {
  say(id, describe(err, doing), offline(err) ? "offline" : "error");
}

// Empty these elements (tables: their bodies) and hide the ones marked `hide`.
function blank(ids, hide = []) {
  for (const id of ids) {
    const node = document.getElementById(id);
    if (!node) continue;
    if (node.tBodies && node.tBodies.length) node.tBodies[0].replaceChildren();
    else node.replaceChildren();
    if (node.dataset.kind) node.dataset.kind = "";
  }
  for (const id of hide) document.getElementById(id).hidden = true;
}

// el("td", {className: "num", dataset: {id}}, "text", childNode, ...)
function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "dataset") Object.assign(node.dataset, v);
    else if (k === "on") for (const [ev, fn] of Object.entries(v)) node.addEventListener(ev, fn);
    else node[k] = v;
  }
  for (const c of children) {
    if (c !== null && c !== undefined) node.append(c instanceof Node ? c : String(c));
  }
  return node;
}

function badge(text, kind) {
  return el("span", { className: `pill ${kind}-${text}`, dataset: { [kind]: text } }, text);
}

function statusBadges(m) {
  return el("span", {}, badge(m.status, "status"), " ", badge(m.tier, "tier"));
}

const shortId = (id) => (id && id.length > 12 ? `${id.slice(0, 8)}…` : id || "");
const when = (ts) => (ts ? ts.replace("T", " ").replace(/(\.\d+)?(Z|\+00:00)$/, "") : "–");

// A stored summary ("request; → conclusion; tests pass; files: a.py; error: …", or "／"
// in Japanese) as labelled parts: [{label, text}]. Unlabelled pieces next to each other
// are one request (a request may hold "; " itself).
const SUMMARY_LABELS = [
  ["outcome", /^(?:→ |結論: )/], ["files", /^(?:files: |ファイル: )/],
  ["errors", /^(?:error: |エラー: )/], ["tests", /^(?:tests? |テスト)/],
];

function summaryParts(text) {
  const parts = [];
  for (const piece of String(text || "").split(/; |／/)) {
    const found = SUMMARY_LABELS.find(([, re]) => re.test(piece));
    const label = found ? found[0] : "request";
    const body = found ? piece.replace(found[1], "") : piece;
    const last = parts[parts.length - 1];
    if (label === "request" && last && last.label === "request") last.text += `; ${body}`;
    else parts.push({ label, text: body });
  }
  return parts.filter((p) => p.text);
}

// The summary as labelled lines (a memory's head); the labels are drawn by CSS
// (data-part), so the text is the summary's own.
function summaryNode(text) {
  return el("div", { className: "summary-parts" }, ...summaryParts(text).map((p) =>
    el("div", { className: "spart", dataset: { part: p.label } }, p.text)));
}

// A list row's summary: the request as the link, the other parts labelled after it.
function summaryLink(id, text) {
  const parts = summaryParts(text);
  const head = parts.length && parts[0].label === "request" ? parts.shift().text : text;
  return el("span", { className: "summary-line" }, memoryLink(id, head),
    ...parts.map((p) => el("span", { className: "part-tag", dataset: { part: p.label } },
                           p.text)));
}

function memoryLink(id, text) {
  return el("a", { href: `#/memory/${enc(id)}`, title: id }, text || shortId(id));
}

function threadLink(thread, start, end) {
  const label = start === undefined ? thread : `${thread} [${start}..${end}]`;
  return el("a", { href: `#/thread/${enc(thread)}`, title: thread }, label);
}

// ---------------------------------------------------------------- relevance
// The calibrated relevance (docs/contract/API.md): `relevance` (0..1) and
// `nothing_matches` on the answer, `relevance` on each listed memory. Absent when the
// service has no relevance model, or runs another embedder than the one it was
// calibrated with (`relevance_calibrated: false`: the note says so, nothing is rated).
const NOTHING_STRONG = "Nothing strong matches this question";
const rated = (answer) => !!answer && typeof answer.relevance === "number";
const relText = (x) => (typeof x === "number" ? x.toFixed(2) : "–");

// "relevance 0.82" for an answer, "relevance not calibrated" under another embedder,
// "" when it carries none.
function relevanceNote(answer) {
  if (rated(answer)) return `relevance ${relText(answer.relevance)}`;
  return answer && answer.relevance_calibrated === false ? "relevance not calibrated" : "";
}

// The line saying nothing strong matches (the lines below are the best of what is held,
// not an answer), or "".
function nothingLine(answer) {
  if (!rated(answer) || answer.nothing_matches !== true) return "";
  return `${NOTHING_STRONG} (relevance ${relText(answer.relevance)}): ` +
    "the lines below are the closest held, not an answer.";
}

// ---------------------------------------------------------------- tenant and key
function currentTenant() {
  return document.getElementById("tenant").value.trim();
}

function noteTenants(ids) {
  const list = document.getElementById("tenants");
  const known = new Set([...list.options].map((o) => o.value));
  for (const id of ids) {
    if (id && !known.has(id)) { list.append(el("option", { value: id })); known.add(id); }
  }
}

// An admin key, or no keys: the tenants the service holds, to pick from in the bar.
async function loadTenants() {
  let answer;
  try {
    answer = await api("GET", "v1/dashboard/tenants", { tenant: false });
  } catch (err) {
    return;  // the field still takes any tenant typed
  }
  const list = document.getElementById("tenants");
  list.replaceChildren(...answer.tenants.map((t) => el("option", {
    value: t.tenant, label: `${t.memories} memories · ${t.events} events`,
  })));
  Page.tenants = answer.tenants;
  const n = answer.tenants.length;
  document.getElementById("tenant").title = n
    ? `${n} tenant(s) here: ${answer.tenants.map((t) => t.tenant).join(", ")}`
    : "this service holds no tenant yet";
}

async function loadWhoami() {
  const input = document.getElementById("tenant");
  try {
    Page.who = await api("GET", "v1/dashboard/whoami", { tenant: false });
  } catch (err) {
    Page.who = { keys: true, tenant: null, role: null, error: err };
  }
  const who = Page.who;
  if (who.tenant && who.role !== "admin") {
    input.value = who.tenant;
    input.readOnly = true;  // a non-admin key sees its own tenant only
  } else {  // issue 47: a keyless (loopback) server opens on its default tenant, `local`
    input.value = sessionStorage.getItem(TENANT_STORE) || who.tenant || who.default_tenant || "";
    await loadTenants();
  }
  document.getElementById("whoami").textContent = who.keys
    ? (who.role ? `${who.role} key · ${who.tenant}` : "key refused") : "no keys (loopback)";
  document.body.dataset.role = who.role || (who.keys ? "none" : "open");
}

// ---------------------------------------------------------------- router
// #/live, #/memories, #/memory/<id>, #/threads, #/thread/<id>, #/fact/<key>, #/inspect,
// #/dead
function route() {
  const [, name = "live", rest = ""] = /^#\/([a-z]+)\/?(.*)$/.exec(location.hash) || [];
  const view = { threads: "thread" }[name] || name;
  const arg = rest ? decodeURIComponent(rest) : "";
  if (!document.getElementById(`view-${view}`)) return;
  if (Page.view && VIEWS[Page.view] && VIEWS[Page.view].leave) VIEWS[Page.view].leave();
  for (const node of document.querySelectorAll(".view")) node.hidden = node.id !== `view-${view}`;
  for (const a of document.querySelectorAll("#tabs a")) {
    a.classList.toggle("on", a.dataset.view === view);
  }
  for (const one of ["memory", "fact"]) {  // the tabs of one thing: shown once opened
    if (view !== one) continue;
    const tab = document.getElementById(`tab-${one}`);
    tab.hidden = false;
    if (arg) tab.href = `#/${one}/${enc(arg)}`;
  }
  Page.view = view;
  document.body.dataset.view = view;
  if (VIEWS[view] && VIEWS[view].enter) VIEWS[view].enter(arg);
}

// The tenant changed: nothing of the previous one stays on the page. Every view drops what
// it shows (its clear()), the last search's answer is forgotten, and a view of one memory
// or thread (the previous tenant's ids) goes back to its list.
function tenantChanged() {
  sessionStorage.setItem(TENANT_STORE, currentTenant());
  Page.recall = null;
  for (const view of Object.values(VIEWS)) if (view.clear) view.clear();
  document.getElementById("tab-memory").hidden = true;
  document.getElementById("tab-fact").hidden = true;
  const [, name = "live", rest = ""] = /^#\/([a-z]+)\/?(.*)$/.exec(location.hash) || [];
  const list = { memory: "#/memories", thread: "#/threads", fact: "#/memories" }[name];
  if (list && rest) location.hash = list;  // hashchange runs route()
  else route();  // the open view reloads for the new tenant
}

async function startViews() {
  await loadWhoami();
  document.getElementById("tenant").addEventListener("change", tenantChanged);
  window.addEventListener("hashchange", route);
  route();
  document.body.dataset.ready = "true";
}

window.addEventListener("DOMContentLoaded", startViews);
