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

// What a failed call means for the person looking at the page (one line).
function describe(err, doing) {
  if (!(err instanceof CallError)) return `${doing} failed: ${err.message}`;
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

function memoryLink(id, text) {
  return el("a", { href: `#/memory/${enc(id)}`, title: id }, text || shortId(id));
}

function threadLink(thread, start, end) {
  const label = start === undefined ? thread : `${thread} [${start}..${end}]`;
  return el("a", { href: `#/thread/${enc(thread)}`, title: thread }, label);
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
  } else {
    input.value = sessionStorage.getItem(TENANT_STORE) || who.tenant || "";
  }
  document.getElementById("whoami").textContent = who.keys
    ? (who.role ? `${who.role} key · ${who.tenant}` : "key refused") : "no keys (loopback)";
  document.body.dataset.role = who.role || (who.keys ? "none" : "open");
}

// ---------------------------------------------------------------- router
// #/live, #/memories, #/memory/<id>, #/threads, #/thread/<id>, #/inspect, #/dead
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
  if (view === "memory") {
    const tab = document.getElementById("tab-memory");
    tab.hidden = false;
    if (arg) tab.href = `#/memory/${enc(arg)}`;
  }
  Page.view = view;
  document.body.dataset.view = view;
  if (VIEWS[view] && VIEWS[view].enter) VIEWS[view].enter(arg);
}

async function startViews() {
  await loadWhoami();
  document.getElementById("tenant").addEventListener("change", () => {
    sessionStorage.setItem(TENANT_STORE, currentTenant());
    route();  // the open view reloads for the new tenant
  });
  window.addEventListener("hashchange", route);
  route();
  document.body.dataset.ready = "true";
}

window.addEventListener("DOMContentLoaded", startViews);
