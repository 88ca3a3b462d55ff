"""The report: ``eval.json`` (every number), ``eval.md`` (tables + per-answer reasons)
and ``eval.png`` (the headline chart)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from breadcrumb.eval import longmemeval, realsessions
from breadcrumb.eval.methods import BREADCRUMB, LABELS, METHODS

GOLDEN_COLUMNS = (
    ("memory_hit1", "Memory Hit@1"), ("memory_hit5", "Memory Hit@5"),
    ("source_hit1", "Source Hit@1"), ("source_hit5", "Source Hit@5"),
    ("exact", "Exact Value Acc."), ("wrong_top1", "Wrong Memory Rate"),
    ("stale_shown", "Stale value shown"), ("tokens_mean", "Tokens (mean)"),
    ("latency_p50_ms", "Latency p50 ms"), ("latency_p95_ms", "Latency p95 ms"),
)
LOCOMO_COLUMNS = (
    ("source_hit1", "Source Hit@1"), ("source_hit5", "Source Hit@5"),
    ("evidence_any", "Evidence in budget"), ("evidence_recall", "Evidence recall"),
    ("tokens_mean", "Tokens (mean)"), ("latency_p50_ms", "Latency p50 ms"),
    ("latency_p95_ms", "Latency p95 ms"),
)


def fmt(value: Any) -> str:
    """Rates as 0.000, other numbers rounded, missing as an en dash."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}" if value <= 1.0 else f"{value:.1f}"
    return str(value)


def _table(summary: dict[str, dict[str, Any]], columns: tuple[tuple[str, str], ...]) -> list[str]:
    head = "| method | n | " + " | ".join(c[1] for c in columns) + " |"
    lines = [head, "|" + "---|" * (len(columns) + 2)]
    for method in METHODS:
        if method in summary:
            s = summary[method]
            cells = " | ".join(fmt(s.get(c[0])) for c in columns)
            lines.append(f"| {LABELS[method]} | {s['questions']} | {cells} |")
    return lines


def markdown(results: dict[str, Any], chart: str | None) -> str:
    """The whole report as Markdown."""
    out = ["# Breadcrumb evaluation", "", f"Embedder: `{results['embedder']}`; config: "
           f"`{json.dumps(results['config'])}`; ingest: `{json.dumps(results['ingest'])}`", ""]
    if chart:
        out += [f"![headline metrics]({chart})", ""]
    out += [*results.get("notes", []), ""] if results.get("notes") else []
    if "golden" in results:
        out += _golden_section(results["golden"])
    if "locomo" in results:
        out += _locomo_section(results["locomo"], results.get("locomo_skipped", {}))
    if "longmemeval" in results:
        out += longmemeval_section(results["longmemeval"])
    if "real_sessions" in results:
        out += realsessions.section(results["real_sessions"])
    out += ["## Thresholds", ""]
    verdicts = results.get("thresholds", [])
    out += [f"- {'PASS' if v['passed'] else 'FAIL'} `{v['name']}`: {v['metric']} = "
            f"{fmt(v['value'])} (limit {v['limit']})" for v in verdicts] or ["- none configured"]
    return "\n".join(out) + "\n"


def _golden_section(g: dict[str, Any]) -> list[str]:
    s = g["summary"]
    bc = s.get(BREADCRUMB, {})
    out = ["## Golden agent history", "",
           "Source Hit is measured on exact-value questions (source needed); Exact Value "
           "Accuracy on questions with a value: evidence text (Breadcrumb), returned raw "
           "text (Raw only), summary text (Summary compact).", ""]
    out += _table(s, GOLDEN_COLUMNS)
    out += ["", f"Decide accuracy (Breadcrumb): {fmt(bc.get('decide_accuracy'))}; source "
            f"recalled when needed: {fmt(bc.get('source_when_needed'))}; source recalled when "
            f"a summary was enough: {fmt(bc.get('source_when_not_needed'))}.", ""]
    out += ["### Per category (Breadcrumb / Raw only / Summary compact)", "",
            "| category | n | Memory Hit@5 | Exact |", "|---|---|---|---|"]
    for cat, n, hit, exact in _per_category(g["rows"]):
        out.append(f"| {cat} | {n} | {hit} | {exact} |")
    out += ["", "### Every answer (Breadcrumb): top memory, score parts, reasons", "",
            "| id | question | class (expected) | top-1 range | score parts | hit@5 | exact "
            "| evidence / reason |", "|---|---|---|---|---|---|---|---|"]
    out += [_answer_line(r) for r in g["rows"]]
    return out + [""]


def _per_category(rows: list[dict[str, Any]]) -> list[tuple[str, int, str, str]]:
    cats = sorted({r["category"] for r in rows})
    out = []
    for cat in cats:
        mine = [r for r in rows if r["category"] == cat]
        hits, exacts = [], []
        for method in (BREADCRUMB, "raw_only", "summary_compact"):
            per = [r["methods"][method] for r in mine]
            hits.append(_share([p["memory_hit5"] for p in per]))
            exacts.append(_share([p["exact"] for p in per if p["exact"] is not None]))
        out.append((cat, len(mine), " / ".join(hits), " / ".join(exacts)))
    return out


def _share(flags: list[bool]) -> str:
    return f"{sum(flags)}/{len(flags)}" if flags else "–"


def _cell(text: str, limit: int = 90) -> str:
    flat = " ".join(text.split()).replace("|", "\\|")
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def _answer_line(r: dict[str, Any]) -> str:
    b = r["methods"][BREADCRUMB]
    top = b["top"][0] if b["top"] else None
    rng = f"{top['thread_id']} [{top['start_index']}..{top['end_index']}]" if top else "–"
    parts = ", ".join(f"{k} {v:.2f}" for k, v in top["score_parts"].items()) if top else "–"
    ev = b["evidence"][0]["reason"] if b["evidence"] else b.get("decision_reason", "")
    cls = f"{b.get('classification')} ({r['expected_classification']})"
    return (f"| {r['id']} | {_cell(r['question'], 60)} | {cls} | {rng} | {parts} | "
            f"{fmt(b['memory_hit5'])} | {fmt(b['exact'])} | {_cell(ev)} |")


def _locomo_section(lo: dict[str, Any], skipped: dict[str, int]) -> list[str]:
    out = ["## LoCoMo (categories 1–4)", "",
           "Breadcrumb asked with `mode=source`; Raw only = dense search over raw turns, "
           "top turns packed into the same token budget. Source Hit@k: a returned source "
           "range (Breadcrumb: top-k memories; Raw: top-k turns) contains an evidence turn. "
           "Evidence in budget: an evidence turn's text is verbatim in the returned text.", ""]
    out += _table(lo["summary"], LOCOMO_COLUMNS)
    out += ["", "Category 5 (adversarial), reported separately:", ""]
    out += _table(lo["adversarial"], LOCOMO_COLUMNS)
    out += ["", "Per category (Source Hit@5 / evidence in budget):", "",
            "| method | " + " | ".join(lo["by_category"][BREADCRUMB]) + " |",
            "|---|" + "---|" * len(lo["by_category"][BREADCRUMB])]
    for method, cats in lo["by_category"].items():
        cells = " | ".join(
            f"{fmt(c['source_hit5'])} / {fmt(c['evidence_any'])} (n={c['questions']})"
            for c in cats.values())
        out.append(f"| {LABELS[method]} | {cells} |")
    out += ["", f"Questions skipped: `{json.dumps(skipped)}`", ""]
    return out


LME_LABELS = {"breadcrumb": "Breadcrumb (source)", "breadcrumb_auto": "Breadcrumb (auto)",
              "breadcrumb_llm": "Breadcrumb + LLM (source)",
              "raw_only": "Raw dense"}
LME_COLUMNS = (("turn_recall", "Turn recall"), ("session_recall_all", "Session recall-all"),
               ("session_recall_any", "Session recall-any"), ("current_value", "Current value"),
               ("memory_turn_hit", "Answer turn in returned ranges"),
               ("tokens_mean", "Tokens (mean)"), ("tokens_max", "Tokens (max)"))


def longmemeval_section(lme: dict[str, Any]) -> list[str]:
    """Headline per method, per-type rows, abstentions, ingest times."""
    rows, summary = lme["rows"], lme.get("summary", {})
    out = ["## LongMemEval", "",
           f"{len(rows)} of {lme['selected']} selected questions run. Each question's history "
           "under its own tenant; Breadcrumb asked with `mode=source` (and `auto`), Raw dense = "
           "dense search over the raw turns packed into the same budget. Turn recall: a "
           "`has_answer` turn among the returned lines; session recall-all: every answer "
           "session has a returned line; current value (knowledge-update): a `has_answer` turn "
           "of the latest answer session among the lines. " + _asked_when(rows)
           + _code_line(lme), ""]
    head = "| type | method | n | " + " | ".join(c[1] for c in LME_COLUMNS) + " |"
    out += [head, "|" + "---|" * (len(LME_COLUMNS) + 3)]
    groups = ["all", *[g for g in next(iter(summary.values()), {}) if g != "all"]]
    for group in groups:
        for method, s in summary.items():
            if group in s:
                cells = " | ".join(fmt(s[group].get(c[0])) for c in LME_COLUMNS)
                out.append(f"| {group} | {LME_LABELS.get(method, method)} | "
                           f"{s[group]['questions']} | {cells} |")
    secs = [r["ingest"]["seconds"] for r in rows]
    if secs:
        out += ["", f"Ingest per question: mean {sum(secs) / len(secs):.1f} s, min "
                f"{min(secs):.1f} s, max {max(secs):.1f} s ({sum(secs):.0f} s in all; events "
                f"per question mean {sum(r['ingest']['events'] for r in rows) / len(rows):.0f})."]
    out += _abstentions(rows)
    out += ["", "### Every question", "",
            "| id | type | date | question | Breadcrumb turn / sessions / tokens | Raw turn / "
            "sessions / tokens | Decide (auto) |", "|---|---|---|---|---|---|---|"]
    out += [_lme_line(r) for r in rows]
    return out + [""]


def _abstentions(rows: list[dict[str, Any]]) -> list[str]:
    """What recall returned where the history does not hold the answer."""
    abst = [r for r in rows if r["group"] == "abstention"]
    if not abst:
        return []
    out = ["", "### Abstentions (the history does not hold the answer)", "",
           "| id | question | auto: Decide / reason | tokens (auto / source / raw) |",
           "|---|---|---|---|"]
    for r in abst:
        ms = r["methods"]
        auto = ms.get("breadcrumb_auto", {})
        toks = " / ".join(str(ms.get(k, {}).get("tokens", "–"))
                          for k in ("breadcrumb_auto", "breadcrumb", "raw_only"))
        out.append(f"| {r['question_id']} | {_cell(r['question'], 60)} | "
                   f"{auto.get('classification', '–')}: {_cell(auto.get('decision_reason', ''))}"
                   f" | {toks} |")
    return out


def _lme_line(r: dict[str, Any]) -> str:
    b, raw = r["methods"].get("breadcrumb", {}), r["methods"].get("raw_only", {})
    auto = r["methods"].get("breadcrumb_auto", {})

    def cell(x: dict[str, Any]) -> str:
        return (f"{fmt(x.get('turn_recall'))} / {fmt(x.get('session_recall_all'))} / "
                f"{x.get('tokens', '–')}")

    return (f"| {r['question_id']} | {r['group']} | {r['question_date'][:10]} | "
            f"{_cell(r['question'], 60)} | {cell(b)} | {cell(raw)} | "
            f"{auto.get('classification', '–')} |")


def chart(results: dict[str, Any], path: Path) -> None:
    """Grouped bars: golden hit/exact/wrong rates per method, LoCoMo hit/evidence."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = []
    if "golden" in results:
        panels.append(("Golden agent history", results["golden"]["summary"],
                       [("memory_hit1", "Mem@1"), ("memory_hit5", "Mem@5"),
                        ("source_hit5", "Src@5"), ("exact", "Exact"), ("wrong_top1", "Wrong")]))
    if "locomo" in results:
        panels.append(("LoCoMo (cat. 1-4)", results["locomo"]["summary"],
                       [("source_hit1", "Src@1"), ("source_hit5", "Src@5"),
                        ("evidence_any", "Evid.@budget")]))
    if results.get("longmemeval", {}).get("summary"):
        panels.append(("LongMemEval (answerable)",
                       {k: v["all"] for k, v in results["longmemeval"]["summary"].items()},
                       [("turn_recall", "Turn"), ("session_recall_all", "Sess.-all"),
                        ("current_value", "Current")]))
    if results.get("real_sessions", {}).get("summary"):
        panels.append(("Real agent sessions",
                       {k: v["all"] for k, v in results["real_sessions"]["summary"].items()},
                       [("hit_rate", "Value in evidence")]))
    fig, axes = plt.subplots(1, max(1, len(panels)), figsize=(6 * max(1, len(panels)), 4))
    axes = axes if len(panels) > 1 else [axes]
    for ax, (title, summary, metrics) in zip(axes, panels, strict=False):
        methods = [m for m in METHODS if m in summary]
        width = 0.8 / len(methods)
        for i, method in enumerate(methods):
            values = [summary[method].get(key) or 0.0 for key, _ in metrics]
            xs = [j + i * width for j in range(len(metrics))]
            ax.bar(xs, values, width, label=LABELS[method])
        ax.set_xticks([j + width * (len(methods) - 1) / 2 for j in range(len(metrics))])
        ax.set_xticklabels([label for _, label in metrics])
        ax.set_ylim(0, 1)
        ax.set_title(title)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write(results: dict[str, Any], out_dir: Path, stem: str = "eval") -> dict[str, Path]:
    """Write ``<stem>.json``, ``<stem>.png`` and ``<stem>.md`` into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"json": out_dir / f"{stem}.json", "png": out_dir / f"{stem}.png",
             "md": out_dir / f"{stem}.md"}
    paths["json"].write_text(json.dumps(results, ensure_ascii=False, indent=1) + "\n", "utf-8")
    chart(results, paths["png"])
    paths["md"].write_text(markdown(results, paths["png"].name), "utf-8")
    return paths


def _asked_when(rows: list[dict[str, Any]]) -> str:
    """How the questions were bounded in time: the end of the question's day (``as_of``)
    with ``now`` at its time, the older minute bound, or none."""
    day = sum(1 for r in rows if r.get("as_of") == longmemeval.AS_OF)
    minute = sum(1 for r in rows if r.get("as_of") is True)
    if day == len(rows):
        return ("Each question asked on its `question_date`: `now` = its time (relative "
                "periods anchored to it), `as_of` = the end of that day (the data dates some "
                "history sessions later on the question's day).")
    parts = [f"{day} of {len(rows)} questions asked with `as_of` at the end of the question's "
             "day and `now` at its time"]
    if minute:
        parts.append(f"{minute} with `as_of` = `now` = the question's time (rows kept from an "
                     "earlier run; their histories hold nothing later that day, so the bound "
                     "saw the same)")
    if len(rows) - day - minute:
        parts.append(f"{len(rows) - day - minute} without `as_of` (runs before recall knew it)")
    return "; ".join(parts) + "."


def _code_line(lme: dict[str, Any]) -> str:
    """Which code asked (a resumed run can mix commits), and how many rows were kept."""
    versions = lme.get("code_versions") or []
    kept = lme.get("resumed", 0)
    line = f" Code: {', '.join(f'`{v}`' for v in versions)}." if versions else ""
    return line + (f" {kept} rows kept from an earlier run (`--longmemeval-resume`)."
                   if kept else "")
