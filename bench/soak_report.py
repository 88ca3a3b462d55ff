"""The soak bench's figures: one summary per run, ``reports/soak.md`` and ``soak.png``.

``summarise`` turns a run's samples into the issue's figures and checks them against its
targets (freshness p95 ≤ 10 s at the steady rate, RSS growth ≤ 10 % over the last 5
minutes of the steady phase — the last half when it is shorter —, 0 lost, 0 duplicated,
backlog drained at ≥ 3× the steady ingest rate). ``write_reports`` rebuilds the markdown
table per mode (then ``soak-notes.md``, the runner's reading of the figures, if present)
and the over-time plot from every ``soak-<mode>.json`` in the folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

MODES = ("embedded", "cluster")
TARGETS = {"fresh_p95_ms": 10_000.0, "rss_growth_pct": 10.0, "drain_ratio": 3.0}
MB = 1024 * 1024


def _disk(row: dict[str, Any]) -> int:
    return sum(v for k, v in row["disk"].items() if not k.endswith("_free"))


def _nearest(rows: list[dict[str, Any]], t: float) -> dict[str, Any]:
    return min(rows, key=lambda r: abs(r["t"] - t))


def _rss(steady: list[dict[str, Any]], start: float, end: float) -> dict[str, Any]:
    """Per process: RSS at the start of the last 5 minutes (or last half) and at the end."""
    mid = end - min(300.0, (end - start) / 2)
    first, last = _nearest(steady, mid), steady[-1]
    out: dict[str, Any] = {"window_s": round(end - mid)}
    for name, value in last["rss"].items():
        base = first["rss"].get(name) or 0
        anon = (last.get("rss_anon") or {}).get(name), (first.get("rss_anon") or {}).get(name)
        out[name] = {"start_mb": round(steady[0]["rss"].get(name, 0) / MB, 1),
                     "mid_mb": round(base / MB, 1), "end_mb": round(value / MB, 1),
                     "max_mb": round(max(r["rss"].get(name, 0) for r in steady) / MB, 1),
                     "growth_pct": round(100.0 * (value - base) / base, 1) if base else None,
                     "anon_mid_mb": None if anon[1] is None else round(anon[1] / MB, 1),
                     "anon_end_mb": None if anon[0] is None else round(anon[0] / MB, 1)}
    return out


def cpu_use(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per process over ``rows`` (one phase): share of one core busy, CPU ms per stored event
    (a process restarted inside the phase counts from its first sample). A phase whose
    samples span under a second (a drain of a few seconds sampled at its two ends) has no
    share: CPU seconds over a few milliseconds of sampling said 2,000,000 %."""
    out: dict[str, Any] = {}
    if len(rows) < 2:
        return out
    seconds = rows[-1]["t"] - rows[0]["t"]
    stored = max(rows[-1]["stored"] - rows[0]["stored"], 1)
    for name, end in rows[-1]["cpu_s"].items():
        start = next((r["cpu_s"][name] for r in rows if r["cpu_s"].get(name)), end)
        used = max(end - start, 0.0)
        out[name] = {"core_pct": round(100 * used / seconds) if seconds >= 1.0 else None,
                     "cpu_ms_per_event": round(1000 * used / stored, 1)}
    return out


def summarise(result: dict[str, Any]) -> dict[str, Any]:
    """The issue's figures of one run, with pass / fail against the targets."""
    samples, marks = result["samples"], result["marks"]
    steady = [r for r in samples if r["phase"] == "steady"]
    seconds = marks["steady_end"] - marks["steady_start"]
    ingest = steady[-1]["acked"] / seconds
    stored = steady[-1]["stored"] / seconds
    drain = result["drain"]
    drain_rate = drain["backlog"] / drain["drain_s"] if drain["drain_s"] else None
    through = drain["stored_during"] / drain["drain_s"] if drain["drain_s"] else None
    rss = _rss(steady, marks["steady_start"], marks["steady_end"])
    growth = [v["growth_pct"] for k, v in rss.items() if isinstance(v, dict)
              and v["growth_pct"] is not None]
    fresh = result["steady_freshness"]
    disk_per_event = ((_disk(steady[-1]) - _disk(steady[0]))
                      / max(steady[-1]["stored"] - steady[0]["stored"], 1))
    ret = result["retention"]
    size = "sqlite_bytes" if "sqlite_bytes" in ret["before"] else "sql_bytes"
    loads = [r["load1"] for r in samples]
    checks = {
        "fresh_p95_ms": fresh.get("p95") is not None
        and fresh["p95"] <= TARGETS["fresh_p95_ms"],
        "rss_growth_pct": bool(growth) and max(growth) <= TARGETS["rss_growth_pct"],
        "lost_duplicated": result["lost"] == 0 and result["duplicated"] == 0,
        "drain_ratio": bool(drain["drained"] and drain_rate
                            and drain_rate >= TARGETS["drain_ratio"] * ingest),
    }
    return {
        "mode": result["run"]["mode"], "steady_s": round(seconds),
        "offered_eps": result["run"]["agents"] * result["run"]["rate"],
        "ingest_eps": round(ingest, 2), "stored_eps": round(stored, 2),
        "fresh_p50_ms": fresh.get("p50"), "fresh_p95_ms": fresh.get("p95"),
        "fresh_samples": fresh.get("samples"),
        "recall_ms": result["steady_recall_ms"],
        "recall_hit_pct": round(100.0 * result["ledger"]["recall_hits"]
                                / max(result["ledger"]["recalls"], 1), 1),
        "rss": rss, "rss_growth_max_pct": max(growth) if growth else None,
        "disk_per_event_bytes": round(disk_per_event),
        "disk_end_mb": round(_disk(steady[-1]) / MB, 1),
        "event_bytes_sent": round(result["ledger"]["bytes_sent"]
                                  / max(result["ledger"]["acked"], 1)),
        "acked": result["acked"], "lost": result["lost"], "duplicated": result["duplicated"],
        "stored_not_acked": result["stored_not_acked"],
        "backlog": drain["backlog"], "restart_s": drain["restart_s"],
        "drain_s": drain["drain_s"], "drained": drain["drained"],
        "drain_eps": round(drain_rate, 2) if drain_rate else None,
        "drain_throughput_eps": round(through, 2) if through else None,
        "drain_ratio": round(drain_rate / ingest, 2) if drain_rate and ingest else None,
        "retention_changes": ret["changes"],
        "retention_before_mb": round(ret["before"][size] / MB, 2),
        "retention_after_mb": round(ret["after_sweep"][size] / MB, 2),
        "retention_reusable_mb": round(ret["after_sweep"]["free_bytes"] / MB, 2),
        "retention_compacted_mb": round(ret["after_vacuum"][size] / MB, 2),
        "retention_rows": {k: [ret["before"][k], ret["after_sweep"][k]]
                           for k in ret["before"] if k.startswith("rows_")},
        "cold_mb": round(ret["cold_bytes"] / MB, 2),
        "cpu_steady": cpu_use(steady),
        "cpu_drain": cpu_use([r for r in samples if r["phase"] == "drain"]),
        "load1_mean": round(sum(loads) / len(loads), 2) if loads else None,
        "load1_max": round(max(loads), 2) if loads else None,
        "checks": checks,
    }


def _ok(flag: bool) -> str:
    return "✅" if flag else "❌"


def table(result: dict[str, Any]) -> list[str]:
    """The markdown table of one mode."""
    s, run = result["summary"], result["run"]
    c, r = s["checks"], s["recall_ms"]
    rss = "; ".join(f"{k} {v['mid_mb']} → {v['end_mb']} MB ({v['growth_pct']} %"
                    + (f"; anonymous {v['anon_mid_mb']} → {v['anon_end_mb']} MB)"
                       if v.get("anon_end_mb") is not None else ")")
                    for k, v in s["rss"].items() if isinstance(v, dict))
    rows = [
        ("steady phase", f"{s['steady_s']} s, {run['agents']} agents × {run['rate']} ev/s "
         f"= {s['offered_eps']} ev/s offered, {run['recallers']} recallers", ""),
        ("ingest (acknowledged) / stored", f"{s['ingest_eps']} / {s['stored_eps']} events/s", ""),
        ("bytes per event sent", f"{s['event_bytes_sent']}", ""),
        ("freshness accepted→recallable p50 / p95",
         f"{s['fresh_p50_ms']} / {s['fresh_p95_ms']} ms ({s['fresh_samples']} events)",
         f"p95 ≤ 10 s {_ok(c['fresh_p95_ms'])}"),
        ("recall p50 / p95 / max", f"{_r(r['p50'])} / {_r(r['p95'])} / {_r(r['max'])} ms "
         f"({r['n']} recalls, exact value in {s['recall_hit_pct']} %)", ""),
        (f"RSS over the last {s['rss']['window_s']} s", rss,
         f"≤ 10 % {_ok(c['rss_growth_pct'])}"),
        ("disk per stored event / at the end of the steady phase",
         f"{s['disk_per_event_bytes']} B / {s['disk_end_mb']} MB", ""),
        ("acknowledged / lost / duplicated",
         f"{s['acked']} / {s['lost']} / {s['duplicated']} (stored, never acknowledged: "
         f"{s['stored_not_acked']})", f"0 / 0 {_ok(c['lost_duplicated'])}"),
        (f"outage {run['outage_s']:g} s: backlog, restart, drain",
         f"{s['backlog']} events, back up in {s['restart_s']} s, drained in {s['drain_s']} s"
         f"{'' if s['drained'] else ' (NOT drained)'}", ""),
        ("drain rate (backlog / drain time), throughput while draining",
         f"{s['drain_eps']} / {s['drain_throughput_eps']} events/s = {s['drain_ratio']}× "
         "the steady ingest rate", f"≥ 3× {_ok(c['drain_ratio'])}"),
        ("CPU steady / while draining (share of one core, ms per stored event)",
         f"{_cpu(s.get('cpu_steady', {}))} / {_cpu(s.get('cpu_drain', {}))}", ""),
        ("retention pass (sweeper at +8 / +31 / +38 d)", _changes(s['retention_changes']), ""),
        ("store size before → after the pass → compacted",
         f"{s['retention_before_mb']} → {s['retention_after_mb']} MB (reusable inside: "
         f"{s['retention_reusable_mb']} MB) → {s['retention_compacted_mb']} MB; "
         f"archived to cold storage {s['cold_mb']} MB", ""),
        ("rows before → after", ", ".join(f"{k[5:]} {a} → {b}" for k, (a, b)
                                          in s["retention_rows"].items()), ""),
        ("load average (1 min) during the run", f"mean {s['load1_mean']}, max "
         f"{s['load1_max']} on {run['cores']} cores", ""),
    ]
    return ([f"### {run['mode']} (embedder {run['embedder']})", "", f"`{run['command']}`", "",
             "| figure | value | target |", "|---|---|---|"]
            + [f"| {a} | {b} | {t} |" for a, b, t in rows] + [""])


def _cpu(use: dict[str, Any]) -> str:
    return ", ".join(f"{k} {'–' if v['core_pct'] is None else v['core_pct']} % "
                     f"{v['cpu_ms_per_event']} ms" for k, v in use.items())


def _r(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f}"


def _changes(changes: dict[str, dict[str, int]]) -> str:
    return "; ".join(f"{day}: " + (", ".join(f"{k} {v}" for k, v in sorted(c.items())) or
                                   "nothing due") for day, c in changes.items())


def plot(results: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(4, 1, figsize=(10, 12), sharex=True)
    panels = (("events/s acknowledged (solid) and stored (dotted)", None),
              ("freshness p95, s", None), ("RSS, MB", None), ("disk, MB", None))
    for ax, (title, _) in zip(axes, panels, strict=True):
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
    for result, colour in zip(results, ("tab:blue", "tab:orange"), strict=False):
        mode, rows, marks = result["run"]["mode"], result["samples"], result["marks"]
        t = [r["t"] / 60 for r in rows]
        axes[0].plot(t, [r["acked_per_s"] for r in rows], color=colour, label=mode)
        axes[0].plot(t, [r["stored_per_s"] for r in rows], color=colour, linestyle=":")
        axes[1].plot(t, [(r["fresh_p95_ms"] or float("nan")) / 1000 for r in rows],
                     color=colour, label=mode)
        for name in rows[-1]["rss"]:
            axes[2].plot(t, [(r["rss"].get(name) or float("nan")) / MB for r in rows],
                         color=colour,
                         linestyle="-" if name != "serve" or mode == "embedded" else "--",
                         label=f"{mode} {name}")
        axes[3].plot(t, [_disk(r) / MB for r in rows], color=colour, label=mode)
        for ax in axes:
            ax.axvspan(marks["outage_start"] / 60, marks["outage_end"] / 60, color=colour,
                       alpha=0.08)
    axes[1].axhline(10, color="red", linewidth=0.8, linestyle="--")
    for ax in axes:
        ax.legend(fontsize=8)
    axes[-1].set_xlabel("minutes since start (shaded: outage)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write_reports(folder: Path) -> None:
    """``soak.md`` and ``soak.png`` from every ``soak-<mode>.json`` in ``folder``."""
    results = [orjson.loads((folder / f"soak-{m}.json").read_bytes()) for m in MODES
               if (folder / f"soak-{m}.json").exists()]
    for result in results:  # figures from the samples, as this version of the bench reads them
        result["summary"] = summarise(result)
    lines = ["# Soak bench (issue 29)", "",
             "Made by `bench/soak.py` (see its docstring and docs/operations.md#soak-bench). "
             "Freshness is the service's own accepted → recallable measure: embedded, the "
             "server's ring buffer of its last 4096 entries at the end of the steady phase; "
             "cluster, the workers' histogram over the steady phase (bucket upper bounds, "
             "≤ 25 % above the true value). Lost / duplicated: every acknowledged event id "
             "looked up in `raw_events` at the end.", "", "![over time](soak.png)", ""]
    for result in results:
        lines += table(result)
    notes = folder / "soak-notes.md"  # what the figures mean, written by whoever ran them
    if notes.exists():
        lines += ["", notes.read_text()]
    (folder / "soak.md").write_text("\n".join(lines))
    if results:
        plot(results, folder / "soak.png")
