// Dead letters (GET /v1/dead_letters, newest first, "Older" follows next_before): why each
// event was refused and where it was, the payload as received; and forgetting a whole
// tenant (POST /v1/forget {"tenant": true}) behind the confirmation step. Re-drive
// (POST /v1/dead_letters/{id}/redrive, admin) sends a letter through intake again.
"use strict";

const Dead = { before: null, letters: new Map(), open: "" };

function payloadCell(text) {
  const short = text && text.length > 160 ? `${text.slice(0, 160)}…` : text || "";
  return el("td", { className: "payload" }, el("code", { title: text || "" }, short));
}

// Re-drive (admin): the payload as received through intake again, after a fix. The
// outcome goes in `box` (a row's cell or the open letter's line); `done(d)` redraws.
function redriveInto(box, d, done) {
  if (d.redrive) {
    box.textContent = `${d.redrive.outcome} ${when(d.redrive.at)} by ${d.redrive.actor}`;
    return box;
  }
  const button = el("button", { type: "button" }, "Re-drive");
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      const made = await api("POST", `v1/dead_letters/${enc(d.id)}/redrive`,
                             { body: {}, tenant: false });
      d.redrive = { outcome: made.outcome, at: made.redriven_at, actor: made.actor };
      done(d);
    } catch (err) {
      button.disabled = false;
      box.append(el("div", { className: "status-line", dataset: { kind: "error" } },
                    describe(err, "re-drive dead letters")));
    }
  });
  box.append(button);
  return box;
}

// A re-driven letter: its row and, when open, its view say so.
function redrawLetter(d) {
  const row = document.querySelector(`#d-list tbody tr[data-id="${CSS.escape(String(d.id))}"]`);
  if (row) row.replaceWith(letterRow(d));
  if (Dead.open === String(d.id)) showLetter(d);
}

// A row opens its letter (#/dead/<id>): the whole payload and the re-drive.
function letterRow(d) {
  Dead.letters.set(String(d.id), d);
  const row = el("tr", { dataset: { id: String(d.id) }, className: "opens",
                         title: "open this dead letter" },
    el("td", {}, el("a", { href: `#/dead/${enc(String(d.id))}` }, String(d.id))),
    el("td", { className: "nowrap" }, when(d.received_at)),
    el("td", {}, d.source || "–"), el("td", { className: "position" }, d.position || "–"),
    el("td", { className: "reason" }, d.reason + (d.field ? ` (field ${d.field})` : "")),
    el("td", {}, d.event_id || "–"), payloadCell(d.payload),
    redriveInto(el("td", { className: "redrive" }), d, redrawLetter));
  row.addEventListener("click", (e) => {
    if (!e.target.closest("a, button, input")) location.hash = `#/dead/${enc(String(d.id))}`;
  });
  return row;
}

// The payload as received, indented when it is JSON.
function fullPayload(text) {
  try { return JSON.stringify(JSON.parse(text), null, 2); } catch (err) { return text || ""; }
}

function showLetter(d) {
  document.getElementById("d-fields").replaceChildren(...[
    ["received (UTC)", when(d.received_at)], ["source", d.source || "–"],
    ["position", d.position || "–"], ["tenant", d.user_id || "–"],
    ["event", d.event_id || "–"],
    ["reason", d.reason + (d.field ? ` (field ${d.field})` : "")],
  ].flatMap(([k, v]) => [el("dt", {}, k), el("dd", { dataset: { field: k } }, v)]),
  el("dt", {}, "re-drive"),
  redriveInto(el("dd", { className: "redrive" }), d, redrawLetter));
  document.getElementById("d-payload").textContent = fullPayload(d.payload);
  say("d-detail-status", "");
}

// #/dead/<id>: from the letters listed, else read (a plain id: the newest letter at or
// below it, in the caller's scope, must be that one).
async function openLetter(id) {
  const panel = document.getElementById("d-detail");
  Dead.open = id;
  delete document.body.dataset.letterOpen;
  blank(["d-fields", "d-payload", "d-detail-status"]);
  panel.hidden = !id;
  if (!id) return;
  say("d-id", id);
  let letter = Dead.letters.get(id);
  if (!letter && /^[0-9]+$/.test(id)) {
    try {
      const page = await api("GET", "v1/dead_letters", {
        query: { limit: 1, before: Number(id) + 1 }, tenant: !letterAdmin() || !!currentTenant() });
      letter = page.dead_letters.find((d) => String(d.id) === id);
    } catch (err) {
      if (Dead.open === id) sayError("d-detail-status", err, "read the dead letter");
      return;
    }
  }
  if (Dead.open !== id) return;
  if (!letter) {
    const scope = currentTenant() ? ` of tenant ${currentTenant()}` : "";
    say("d-detail-status", `No dead letter ${id}${scope}: it is not among the letters ` +
        "listed below.", "error");
    return;
  }
  showLetter(letter);
  document.body.dataset.letterOpen = id;
}

const letterAdmin = () => !Page.who || !Page.who.keys || Page.who.role === "admin";

async function loadLetters(reset) {
  const tbody = document.getElementById("d-list").tBodies[0];
  if (reset) { Dead.before = null; Dead.letters.clear(); tbody.replaceChildren(); }
  const query = { limit: 50, before: Dead.before };
  try {
    // an admin (or no keys) sees every tenant's letters unless a tenant is chosen
    const page = await api("GET", "v1/dead_letters",
                           { query, tenant: !letterAdmin() || !!currentTenant() });
    tbody.append(...page.dead_letters.map(letterRow));
    Dead.before = page.next_before;
    say("d-status", tbody.rows.length ? "" : "No dead letters.");
    say("d-info", currentTenant() ? `tenant ${currentTenant()}` : "every tenant");
  } catch (err) {
    sayError("d-status", err, "list dead letters");
  }
  document.getElementById("d-more").hidden = !Dead.before;
}

VIEWS.dead = {
  clear() {
    Dead.before = null;
    Dead.letters.clear();
    Dead.open = "";
    blank(["d-list", "d-status", "d-info", "d-id", "d-fields", "d-payload", "d-detail-status"],
          ["d-more", "d-detail"]);
  },
  enter(id) {
    const listed = loadLetters(true);
    if (id) listed.then(() => openLetter(id));  // the letter is most often among them
    else openLetter("");
    const tenant = currentTenant();
    if (!tenant) {
      document.getElementById("tenant-forget").replaceChildren("Choose a tenant first.");
      return;
    }
    forgetBox("tenant-forget", `This erases everything of tenant ${tenant}: every event, ` +
              "memory, chunk, vector, thread state and cold object, for good (keys stay).",
              { tenant: true }, () => {
                // nothing of the tenant stays on any view
                Page.recall = null;
                for (const view of Object.values(VIEWS)) if (view.clear) view.clear();
                loadLetters(true);
              }, `Forget everything of tenant ${tenant}…`);
  },
};

document.getElementById("d-more").addEventListener("click", () => loadLetters(false));
