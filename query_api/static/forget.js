// Forget (POST /v1/forget) with a confirmation step: a first button says exactly what
// will be erased and asks for the word "forget" typed before the real call is made.
"use strict";

// container: element id; what: the sentence naming what goes; body: the forget scope
// ({memory_id} | {thread_id} | {tenant: true}); done(answer) after an erasure; label: the
// first button's text, naming what it would erase.
function forgetBox(containerId, what, body, done, label = "Forget…") {
  const box = document.getElementById(containerId);
  const status = el("span", { className: "status-line forget-status" });
  const start = el("button", { type: "button", className: "danger forget-start" }, label);
  box.replaceChildren(start, " ", status);
  start.addEventListener("click", () => {
    const typed = el("input", { className: "forget-word", placeholder: 'type "forget"',
                                autocomplete: "off", size: 14 });
    const confirm = el("button", { type: "button", className: "danger forget-confirm",
                                   disabled: true }, "Erase for good");
    const cancel = el("button", { type: "button", className: "forget-cancel" }, "Cancel");
    typed.addEventListener("input", () => { confirm.disabled = typed.value.trim() !== "forget"; });
    cancel.addEventListener("click", () => forgetBox(containerId, what, body, done, label));
    confirm.addEventListener("click", async () => {
      confirm.disabled = true;
      status.textContent = "erasing…";
      try {
        const answer = await api("POST", "v1/forget", { body: { ...body, actor: "dashboard" } });
        const total = Object.values(answer.counts || {}).reduce((a, b) => a + Number(b || 0), 0);
        box.replaceChildren(el("span", { className: "status-line forget-status", dataset:
          { kind: "ok" } }, `Erased ${answer.erased} at ${when(answer.at)} (${total} rows).`));
        if (done) done(answer);
      } catch (err) {
        status.textContent = describe(err, "forget");
        status.dataset.kind = "error";
      }
    });
    box.replaceChildren(el("p", { className: "warn" }, what), typed, " ", confirm, " ", cancel,
                        " ", status);
    typed.focus();
  });
}
