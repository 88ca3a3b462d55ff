// Raw events, verbatim: one page at a time from GET /v1/threads/{id}/events?paged=true,
// each event's content with the lines recall extracted marked (<mark>, found by their
// exact text in the event's content: every extracted line is a slice of it).
"use strict";

const EVENTS_PAGE = 50;

// lines: [{event_index, text}] (a RecalledEvidence's `lines`), by event index.
function linesByEvent(lines) {
  const out = new Map();
  for (const line of lines || []) {
    if (!out.has(line.event_index)) out.set(line.event_index, []);
    out.get(line.event_index).push(line.text);
  }
  return out;
}

// The content as text nodes with each extracted line's first occurrence marked.
function markedContent(content, wanted) {
  const spans = [];
  for (const text of wanted || []) {
    if (!text) continue;
    let at = content.indexOf(text);
    while (at >= 0 && spans.some(([s, e]) => at < e && at + text.length > s)) {
      at = content.indexOf(text, at + 1);  // the same line twice: the next occurrence
    }
    if (at >= 0) spans.push([at, at + text.length]);
  }
  spans.sort((a, b) => a[0] - b[0]);
  const pre = el("pre", { className: "content" });
  let pos = 0;
  for (const [s, e] of spans) {
    pre.append(content.slice(pos, s), el("mark", {}, content.slice(s, e)));
    pos = e;
  }
  pre.append(content.slice(pos));
  return { node: pre, marked: spans.length };
}

function eventItem(ev, wanted) {
  const { node, marked } = markedContent(ev.content || "", wanted);
  const head = el("div", { className: "ev-head" },
    el("span", { className: "idx" }, `[${ev.index}]`), " ",
    el("span", { className: "muted" }, when(ev.ts)), " ",
    el("b", {}, `${ev.role}/${ev.kind}`),
    ev.tool ? el("span", { className: "muted" }, ` (${ev.tool})`) : null,
    ev.attrs && ev.attrs.path ? el("code", { className: "path" }, ` ${ev.attrs.path}`) : null);
  const item = el("li", { className: "event", dataset: { index: String(ev.index) } }, head, node);
  if (marked) item.classList.add("matched");
  return item;
}

// A pager over one thread's events from `start` to `end` (inclusive; null: to the end).
// `decorate(item, event)` may shade an item (the thread view's windows).
class EventPager {
  constructor(listId, moreId, statusId) {
    this.list = document.getElementById(listId);
    this.more = document.getElementById(moreId);
    this.statusId = statusId;
    this.more.addEventListener("click", () => this.next());
    this.reset(null);
  }

  reset(thread, start = 0, end = null, lines = [], decorate = null) {
    this.thread = thread;
    this.start = start;
    this.end = end;
    this.nextStart = start;
    this.wanted = linesByEvent(lines);
    this.decorate = decorate;
    this.lastIndex = start - 1;
    this.token = (this.token || 0) + 1;  // answers for an older reset are dropped
    this.list.replaceChildren();
    this.more.hidden = true;
  }

  // Re-mark the events shown with new lines (no reload).
  highlight(lines) {
    this.wanted = linesByEvent(lines);
    for (const item of this.list.children) {
      const ev = item.eventData;
      const fresh = eventItem(ev, this.wanted.get(ev.index));
      if (this.decorate) this.decorate(fresh, ev);
      fresh.eventData = ev;
      item.replaceWith(fresh);
    }
  }

  async next() {
    if (this.thread === null || this.nextStart === null) return 0;
    const token = this.token;
    const query = { start: this.nextStart, end: this.end, limit: EVENTS_PAGE, paged: "true" };
    let page;
    try {
      page = await api("GET", `v1/threads/${enc(this.thread)}/events`, { query });
    } catch (err) {
      if (token === this.token) sayError(this.statusId, err, "read the events");
      return 0;
    }
    if (token !== this.token) return 0;
    this.append(page.events);
    this.nextStart = page.next_start;
    this.more.hidden = page.next_start === null;
    return page.events.length;
  }

  append(events) {
    for (const ev of events) {
      if (ev.index <= this.lastIndex) continue;
      const item = eventItem(ev, this.wanted.get(ev.index));
      item.eventData = ev;
      if (this.decorate) this.decorate(item, ev);
      this.list.append(item);
      this.lastIndex = ev.index;
    }
  }

  // Live: read what came after the last event shown (only when every page is loaded).
  async tail() {
    if (this.thread === null || this.nextStart !== null) return 0;
    const token = this.token;
    const query = { start: this.lastIndex + 1, limit: EVENTS_PAGE, paged: "true" };
    const page = await api("GET", `v1/threads/${enc(this.thread)}/events`, { query });
    if (token !== this.token) return 0;
    this.append(page.events);
    if (page.next_start !== null) { this.nextStart = page.next_start; this.more.hidden = false; }
    return page.events.length;
  }
}
