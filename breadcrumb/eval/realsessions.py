"""Exact-value questions over real agent sessions (``breadcrumb eval --real-sessions DIR``).

The question set (``eval/agents/real_questions.jsonl``) names, per question, the agent, the
public session it was written from (repository, commit, path), the question as a user
would ask it and the exact value that appears verbatim in that session. The sessions are
not shipped (they belong to their authors): the user prepares ``DIR/<agent>/…`` from the
listed sources (``eval/agents/README.md``). Each agent folder named by a question is
imported (format recognised by content) under one tenant, so every question is asked
against all the sessions; a **hit** is the value verbatim in the evidence of Breadcrumb's
answer (``mode=source``, ``k``, ``max_tokens``), and the raw-chunk baseline is asked the
same question within the same budget.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from breadcrumb.eval.methods import BREADCRUMB, BREADCRUMB_LLM, RAW, Answer, Query

#: the one tenant every real session is imported under
USER = "real-sessions"
#: the question set shipped with the repository (absent from an installed wheel)
DEFAULT_QUESTIONS = Path(__file__).resolve().parents[2] / "eval" / "agents" / \
    "real_questions.jsonl"
_FIELDS = ("id", "agent", "source", "question", "value")


@dataclass(frozen=True, slots=True)
class RealQuestion:
    """One question: its agent, where its session is public, and the exact value."""

    qid: str
    agent: str
    source: dict[str, str]
    question: str
    value: str


@dataclass(slots=True)
class Sessions:
    """What one ``DIR`` gave: events to ingest, per agent files / events, what failed."""

    events: list[dict[str, Any]] = field(default_factory=list)
    agents: dict[str, dict[str, int]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    failed: list[dict[str, str]] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)


def load_questions(path: Path) -> list[RealQuestion]:
    """The question set; a malformed line is a ``ValueError`` naming the line."""
    if not path.is_file():
        raise ValueError(f"no question set at {path} (--real-questions FILE)")
    questions: list[RealQuestion] = []
    seen: set[str] = set()
    for number, line in enumerate(path.read_text("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{number}: not JSON: {exc.msg}") from exc
        missing = [k for k in _FIELDS if not data.get(k)] if isinstance(data, dict) else _FIELDS
        if missing:
            raise ValueError(f"{path}:{number}: missing {', '.join(missing)}")
        if data["id"] in seen:
            raise ValueError(f"{path}:{number}: duplicate id {data['id']!r}")
        seen.add(data["id"])
        source = data["source"] if isinstance(data["source"], dict) else {"path": data["source"]}
        questions.append(RealQuestion(str(data["id"]), str(data["agent"]),
                                      {k: str(v) for k, v in source.items()},
                                      str(data["question"]), str(data["value"])))
    if not questions:
        raise ValueError(f"{path}: no questions")
    return questions


def load_sessions(directory: Path, agents: Iterable[str]) -> Sessions:
    """Import ``directory/<agent>/`` for every agent asked about (format auto-detected).

    A file no importer recognises is reported, not fatal; a folder of an agent no
    question names is ignored (and listed)."""
    from breadcrumb.importers import ImportFormatError, ImportOptions, import_path, transcripts_in

    if not directory.is_dir():
        raise ValueError(f"--real-sessions: no such directory: {directory}")
    wanted = sorted(set(agents))
    out = Sessions(ignored=sorted(p.name for p in directory.iterdir()
                                  if p.is_dir() and p.name not in wanted))
    options = ImportOptions(user_id=USER)
    for agent in wanted:
        folder = directory / agent
        if not folder.is_dir():
            out.missing.append(agent)
            continue
        stats = {"files": 0, "events": 0}
        for path in transcripts_in(folder):
            try:
                results = import_path(path, "auto", options)
            except (ImportFormatError, OSError, UnicodeDecodeError) as exc:
                out.failed.append({"agent": agent, "path": str(path.relative_to(directory)),
                                   "error": str(exc)[:200]})
                continue
            stats["files"] += 1
            for result in results:
                out.events.extend(result.events)
                stats["events"] += len(result.events)
        out.agents[agent] = stats
    return out


def ask_all(questions: Sequence[RealQuestion], methods: dict[str, Callable[[Query], Answer]],
            k: int, max_tokens: int, available: set[str],
            tick: Callable[[], None] | None = None) -> list[dict[str, Any]]:
    """One row per question: per method a hit (value verbatim in the answer text) and the
    tokens; a question whose agent has no sessions is a row marked ``skipped``."""
    rows = []
    for q in questions:
        row: dict[str, Any] = {"id": q.qid, "agent": q.agent, "question": q.question,
                               "value": q.value, "source": q.source}
        if q.agent not in available:
            row["skipped"] = "no sessions for this agent"
            rows.append(row)
            continue
        row["methods"] = {}
        for name, method in methods.items():
            ans = method(Query(USER, q.question, k, max_tokens, "source"))
            row["methods"][name] = {"hit": q.value in ans.text, "tokens": ans.tokens,
                                    # line precision: the value within the first 3 lines
                                    "top3": q.value in "\n".join(ans.text.splitlines()[:3]),
                                    "classification": ans.classification,
                                    "evidence_lines": len(ans.text.splitlines())}
            if tick is not None:
                tick()
        rows.append(row)
    return rows


def summarize(rows: Sequence[dict[str, Any]], method: str) -> dict[str, Any]:
    """Hits overall and per agent (asked questions only), mean tokens."""
    asked = [r for r in rows if method in r.get("methods", {})]

    def agg(part: list[dict[str, Any]]) -> dict[str, Any]:
        hits = sum(r["methods"][method]["hit"] for r in part)
        top3 = sum(bool(r["methods"][method].get("top3")) for r in part)
        tokens = [r["methods"][method]["tokens"] for r in part]
        return {"questions": len(part), "hits": hits, "top3": top3,
                "hit_rate": round(hits / len(part), 4) if part else None,
                "tokens_mean": round(sum(tokens) / len(tokens), 1) if tokens else None}

    agents = sorted({r["agent"] for r in asked})
    return {"all": agg(asked), "skipped": sum(1 for r in rows if "skipped" in r),
            "agents": {a: agg([r for r in asked if r["agent"] == a]) for a in agents}}


def section(real: dict[str, Any]) -> list[str]:
    """The report section: how it was run, overall and per-agent table, every miss."""
    summary = real.get("summary", {})
    bc, raw = summary.get(BREADCRUMB, {}), summary.get(RAW, {})
    out = ["## Real agent sessions", "",
           f"{real['questions']} exact-value questions ({real['question_set']}) over real "
           f"public sessions of {len(real['agents'])} agents, imported from "
           f"`{real['directory']}` (one tenant, {real['events']} events; format recognised "
           "by content). Hit = the value verbatim in the evidence (Breadcrumb `mode=source`, "
           f"k={real['k']}, max_tokens={real['max_tokens']}); Raw only = the raw-chunk "
           "baseline packed into the same budget.", "",
           f"Command: `{real['command']}`", ""]
    if real.get("missing"):
        out += [f"No sessions for: {', '.join(real['missing'])} (their questions skipped).", ""]
    if real.get("failed"):
        out += [f"Files no importer read: {len(real['failed'])} "
                f"({', '.join(f['path'] for f in real['failed'][:5])}).", ""]
    out += ["| agent | files | events | n | Breadcrumb hits | Breadcrumb | Raw only | "
            "tokens (mean) |", "|---|---|---|---|---|---|---|---|"]
    for agent in sorted(bc.get("agents", {})):
        a, r = bc["agents"][agent], raw.get("agents", {}).get(agent, {})
        files = real["agents"].get(agent, {})
        out.append(f"| {agent} | {files.get('files', 0)} | {files.get('events', 0)} | "
                   f"{a['questions']} | {a['hits']} | {_pct(a['hit_rate'])} | "
                   f"{_pct(r.get('hit_rate'))} | {a['tokens_mean']} |")
    if bc.get("all"):
        a, r = bc["all"], raw.get("all", {})
        out.append(f"| **all** | {sum(v['files'] for v in real['agents'].values())} | "
                   f"{real['events']} | {a['questions']} | {a['hits']} | "
                   f"**{_pct(a['hit_rate'])}** | {_pct(r.get('hit_rate'))} | "
                   f"{a['tokens_mean']} |")
    if bc.get("all"):
        asked = [row for row in real["rows"] if row.get("methods")]
        either = sum(1 for row in asked if row["methods"][BREADCRUMB]["hit"]
                     or row["methods"].get(RAW, {}).get("hit"))
        out += ["", f"Value within the first 3 evidence lines (line precision): Breadcrumb "
                f"{bc['all'].get('top3', 0)}/{bc['all']['questions']}, Raw only "
                f"{raw.get('all', {}).get('top3', 0)}/{bc['all']['questions']}; either method "
                f"holds the value: {either}/{len(asked)}."]
    llm = summary.get(BREADCRUMB_LLM, {}).get("all")
    if llm:
        out += ["", f"Breadcrumb + LLM (the configured model chooses among the ranked lines, "
                f"level 3): {llm['hits']}/{llm['questions']} ({_pct(llm['hit_rate'])}), "
                f"value within the first 3 lines {llm.get('top3', 0)}/{llm['questions']}, "
                f"{llm['tokens_mean']} tokens (mean)."]
    misses = [row for row in real["rows"]
              if row.get("methods") and not row["methods"][BREADCRUMB]["hit"]]
    out += ["", f"### Misses ({len(misses)})", ""]
    out += [f"- `{row['id']}` ({row['agent']}) {row['question']} — wanted `{_cell(row['value'])}`"
            for row in misses] or ["- none"]
    return out + [""]


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"


def _cell(text: str, limit: int = 80) -> str:
    text = text.replace("`", "'").replace("\n", " ")
    return text if len(text) <= limit else text[:limit - 1] + "…"
