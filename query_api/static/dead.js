// Dead letters (GET /v1/dead_letters, newest first, "Older" follows next_before): why each
// event was refused and where it was, the payload as received; and forgetting a whole
// tenant (POST /v1/forget {"tenant": true}) behind the confirmation step. Re-drive
// (POST /v1/dead_letters/{id}/redrive, admin) sends a letter through intake again.
"use strict";

const Dead = { before: null };

function payloadCell(text) {
  const short = text && text.length > 160 ? `${text.slice(0, 160)}…` : text || "";
  return el("td", { className: "payload" }, el("code", { title: text || "" }, short));
}

// Re-drive (admin): the payload as received through intake again, after a fix.
function redriveCell(d) {
  const cell = el("td", { className: "redrive" });
  if (d.redrive) {
    cell.textContent = `${d.redrive.outcome} ${when(d.redrive.at)} by ${d.redrive.actor}`;
    return cell;
  }
  const button = el("button", { type: "button" }, "Re-drive");
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      const done = await api("POST", `v1/dead_letters/${enc(d.id)}/redrive`,
                             { body: {}, tenant: false });
      cell.textContent = `${done.outcome} ${when(done.redriven_at)} by ${done.actor}`;
    } catch (err) {
      button.disabled = false;
      cell.append(el("div", { className: "status-line", dataset: { kind: "error" } },
                     describe(err, "re-drive dead letters")));
    }
  });
  cell.append(button);
  return cell;
}

function letterRow(d) {
  return el("tr", { dataset: { id: String(d.id) } },
    el("td", {}, String(d.id)), el("td", { className: "nowrap" }, when(d.received_at)),
    el("td", {}, d.source || "–"), el("td", { className: "position" }, d.position || "–"),
    el("td", { className: "reason" }, d.reason + (d.field ? ` (field ${d.field})` : "")),
    el("td", {}, d.event_id || "–"), payloadCell(d.payload), redriveCell(d));
}

async function loadLetters(reset) {
  const tbody = document.getElementById("d-list").tBodies[0];
  if (reset) { Dead.before = null; tbody.replaceChildren(); }
  const query = { limit: 50, before: Dead.before };
  const admin = !Page.who || !Page.who.keys || Page.who.role === "admin";
  try {
    // an admin (or no keys) sees every tenant's letters unless a tenant is chosen
    const page = await api("GET", "v1/dead_letters", { query, tenant: !admin || !!currentTenant() });
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
  clear() { Dead.before = null; blank(["d-list", "d-status", "d-info"], ["d-more"]); },
  enter() {
    loadLetters(true);
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
