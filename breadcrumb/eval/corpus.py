"""The golden corpus: a multi-day coding-agent history of a fictional web shop.

``golden_events()`` returns contract-valid event dicts (deterministic: no randomness,
fixed timestamps, explicit indices). ``PLANTED`` lists exact values with the event that
holds them and a question in English and Japanese that should recall them. Tenant
``u1`` (project ``shop``) has 7 threads over 3 days, including a 2,000-line pytest
output with exactly one FAILED line, a Japanese thread, a research thread with arXiv
ids, and two values that change later (``CHANGES``). Tenant ``u2`` has look-alike
threads (even the same thread ids) with different values.

``python -m breadcrumb.eval.corpus`` rewrites ``data/golden.jsonl`` and ``data/planted.json``
(snapshots the tests compare with; the evaluation builds the events from this module).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REGEX_V1 = r"/^[^@\s]+@[^@\s]+\.[^@\s]{2,}$/i"
REGEX_V2 = r"/^[A-Za-z0-9._%+-]+@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}$/"
REVENUE_SQL = (
    "SELECT date_trunc('day', created_at) AS day, sum(total_cents) AS revenue_cents "
    "FROM orders WHERE status = 'paid' AND created_at >= now() - interval '7 days' "
    "GROUP BY 1 ORDER BY 1;"
)
FAILING_NODE = "tests/test_checkout.py::test_apply_coupon_rounding"
BIG_LOG_TESTS = 2000
FAILING_POSITION = 1234

PLANTED: list[dict[str, Any]] = []
#: Values that change later in u1's history (for the lifecycle / supersede work).
CHANGES: list[dict[str, str]] = [
    {"user_id": "u1", "key": "env:DB_PORT", "old": "5432", "new": "6432"},
    {"user_id": "u1", "key": "file:src/auth/validate-email.ts#EMAIL_RE",
     "old": REGEX_V1, "new": REGEX_V2},
]


class _Thread:
    """Appends events to one thread with increasing index and timestamps."""

    def __init__(self, out: list[dict[str, Any]], user: str, thread: str, start: str,
                 agent: str) -> None:
        self.out, self.user, self.thread, self.agent = out, user, thread, agent
        self.ts = datetime.fromisoformat(start).replace(tzinfo=UTC)
        self.index = 0

    def add(self, role: str, kind: str, content: str, tool: str | None = None,
            minutes: int = 1, **attrs: Any) -> str:
        event_id = f"{self.user}-{self.thread}-{self.index:03d}"
        event: dict[str, Any] = {
            "event_id": event_id, "user_id": self.user, "project_id": "shop",
            "agent_id": self.agent, "thread_id": self.thread, "index": self.index,
            "ts": self.ts.strftime("%Y-%m-%dT%H:%M:%SZ"), "role": role, "kind": kind,
            "content": content,
        }
        if tool:
            event["tool"] = tool
        if attrs:
            event["attrs"] = attrs
        self.out.append(event)
        self.index += 1
        self.ts += timedelta(minutes=minutes)
        return event_id

    def user_says(self, text: str) -> str:
        return self.add("user", "message", text)

    def says(self, text: str) -> str:
        return self.add("assistant", "message", text)

    def run(self, command: str, output: str, kind: str = "tool_result",
            exit_code: int | None = None) -> str:
        self.add("assistant", "tool_call", command, tool="bash", command=command)
        attrs: dict[str, Any] = {"command": command}
        if exit_code is not None:
            attrs["exit_code"] = exit_code
        return self.add("tool", kind, output, tool="bash", **attrs)

    def edit(self, path: str, diff: str) -> str:
        return self.add("assistant", "file_edit", diff, tool="edit", path=path)

    def end(self) -> None:
        self.add("system", "session_end", "session end")


def _plant(value: str, event_id: str, question_en: str, question_ja: str, user: str) -> None:
    PLANTED.append({"value": value, "event_id": event_id, "user_id": user,
                    "question_en": question_en, "question_ja": question_ja})


def big_pytest_log() -> str:
    """A ``pytest -v`` run of 2,000 tests with exactly one FAILED line."""
    modules = ("catalog", "cart", "checkout", "users", "orders", "payments", "inventory", "search")
    lines = [
        "============================= test session starts ==============================",
        "platform linux -- Python 3.11.9, pytest-8.2.0, pluggy-1.5.0 -- /usr/bin/python3",
        "cachedir: .pytest_cache",
        "rootdir: /srv/shop",
        f"collected {BIG_LOG_TESTS} items",
        "",
    ]
    for i in range(BIG_LOG_TESTS):
        pct = f"[{(i + 1) * 100 // BIG_LOG_TESTS:3d}%]"
        if i == FAILING_POSITION:
            lines.append(f"{FAILING_NODE} FAILED{'':>34}{pct}")
            continue
        mod = modules[i % len(modules)]
        lines.append(f"tests/test_{mod}.py::test_{mod}_case_{i:04d} PASSED{'':>20}{pct}")
    lines += ["", f"======================== 1 failed, {BIG_LOG_TESTS - 1} passed in 41.27s"
              " ========================="]
    return "\n".join(lines)


def _auth_v1(out: list[dict[str, Any]]) -> None:
    t = _Thread(out, "u1", "auth-email-regex", "2024-05-13T09:00:00", "claude-code")
    t.user_says("The signup form accepts `foo@bar` as an email. Please fix the email validation "
                "in src/auth/validate-email.ts so it requires a domain with a TLD.")
    t.run("cat src/auth/validate-email.ts",
          "export const EMAIL_RE = /^[^@\\s]+@[^@\\s]+$/;\n\n"
          "export function validateEmail(input: string): boolean {\n"
          "  return EMAIL_RE.test(input.trim());\n}\n")
    e = t.edit("src/auth/validate-email.ts",
               "--- a/src/auth/validate-email.ts\n+++ b/src/auth/validate-email.ts\n"
               "@@ -1,4 +1,4 @@\n-export const EMAIL_RE = /^[^@\\s]+@[^@\\s]+$/;\n"
               f"+export const EMAIL_RE = {REGEX_V1};\n")
    # asked as the *first* version: a later thread replaces it (newer beats older otherwise)
    _plant(REGEX_V1, e, "What was the first email validation regex we put in validate-email.ts?",
           "最初に決めた認証のメールアドレス正規表現をもう一回出して", "u1")
    e = t.edit(".env", "--- a/.env\n+++ b/.env\n@@ -3,0 +4 @@\n"
               "+AUTH_ALLOWED_DOMAINS=example.com,corp.example\n")
    _plant("AUTH_ALLOWED_DOMAINS=example.com,corp.example", e,
           "Which domains are allowed to sign up?", "サインアップを許可したドメインは？", "u1")
    t.run("npm test -- validate-email",
          "PASS src/auth/validate-email.test.ts\n  validateEmail\n"
          "    ✓ accepts alice@example.com (2 ms)\n    ✓ rejects foo@bar (1 ms)\n\n"
          "Tests:       2 passed, 2 total\nTime:        1.021 s", kind="test_result", exit_code=0)
    t.says("Decided: EMAIL_RE now requires a dot and a TLD of 2+ characters (case-insensitive), "
           "and signups are limited to AUTH_ALLOWED_DOMAINS. Tests pass.")
    t.end()


def _db_setup(out: list[dict[str, Any]]) -> None:
    t = _Thread(out, "u1", "db-setup", "2024-05-13T13:00:00", "claude-code")
    t.user_says("Set up Postgres and Redis for local dev with docker compose, "
                "and create the orders table.")
    e = t.edit("docker-compose.yml",
               "services:\n  db:\n    image: postgres:16-alpine\n"
               "    ports:\n      - \"5432:5432\"\n"
               "    environment:\n      POSTGRES_USER: shop\n      POSTGRES_PASSWORD: shop\n"
               "  cache:\n    image: redis:7.2\n    ports:\n      - \"6379:6379\"\n")
    _plant("postgres:16-alpine", e, "Which postgres image tag do we run locally?",
           "ローカルの postgres のイメージタグは？", "u1")
    _plant("redis:7.2", e, "Which redis image do we use?", "redis のイメージは何を使ってる？", "u1")
    e = t.run("npm run dev",
              "> shop@0.4.0 dev\n> tsx watch src/server.ts\n\n"
              "Error: connect ECONNREFUSED 127.0.0.1:5432\n"
              "    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1595:16)")
    _plant("ECONNREFUSED", e, "What error did the dev server hit when the database was down?",
           "DB が落ちてた時に dev サーバーが出したエラーは？", "u1")
    e = t.edit("migrations/001_orders.sql",
               "CREATE TABLE orders (\n  id BIGSERIAL PRIMARY KEY,\n  user_id BIGINT NOT NULL,\n"
               "  total_cents INTEGER NOT NULL,\n  status TEXT NOT NULL DEFAULT 'pending',\n"
               "  created_at TIMESTAMPTZ NOT NULL DEFAULT now()\n);\n"
               "CREATE INDEX idx_orders_status_created_at ON orders (status, created_at);\n")
    _plant("total_cents", e, "Which column of orders stores the amount?",
           "orders テーブルの金額のカラム名は？", "u1")
    t.run("docker compose up -d && psql -h localhost -p 5432 -U shop -f migrations/001_orders.sql",
          "[+] Running 2/2\n ✔ Container shop-db-1     Started\n"
          " ✔ Container shop-cache-1  Started\n"
          "CREATE TABLE\nCREATE INDEX")
    t.user_says("What query gives last week's paid revenue per day?")
    e = t.says(f"Use:\n\n{REVENUE_SQL}\n\nIt is served by idx_orders_status_created_at.")
    _plant(REVENUE_SQL, e, "What was the SQL for last week's paid revenue?",
           "先週の売上を出す SQL をもう一度見せて", "u1")
    e = t.edit(".env", "--- a/.env\n+++ b/.env\n@@ -1,0 +1,2 @@\n+DB_PORT=5432\n"
               "+DATABASE_URL=postgresql://shop:shop@localhost:5432/shop\n")
    _plant("DB_PORT=5432", e, "What was DB_PORT set to when we first set up the database?",
           "最初に DB を立てた時の DB_PORT は？", "u1")
    t.end()


def _inventory_cron(out: list[dict[str, Any]]) -> None:
    t = _Thread(out, "u1", "inventory-cron", "2024-05-14T10:00:00", "codex")
    t.user_says("在庫同期のバッチを5分ごとに回したいです。"
                "cron の設定と、手動で叩ける API も用意してください。")
    e = t.says("了解です。`deploy/crontab` に追加し、"
               "手動実行用に POST /v1/inventory/sync を用意します。")
    _plant("POST /v1/inventory/sync", e, "Which endpoint triggers the inventory sync manually?",
           "在庫同期を手動で実行するエンドポイントは？", "u1")
    e = t.edit("deploy/crontab",
               "--- a/deploy/crontab\n+++ b/deploy/crontab\n@@ -0,0 +1 @@\n"
               "+*/5 * * * * cd /srv/shop && python -m shop.jobs.sync_inventory"
               " >> /var/log/shop/sync.log 2>&1\n")
    _plant("*/5 * * * *", e, "What is the cron schedule of the inventory sync?",
           "在庫同期の cron 式は？", "u1")
    t.edit("src/api/routes/inventory.ts",
           "+router.post('/v1/inventory/sync', requireAdmin, syncInventory);\n")
    t.run("curl -s -X POST http://localhost:3000/v1/inventory/sync",
          '{"synced": 128, "skipped": 3}')
    t.says("5分ごとの在庫同期 (`*/5 * * * *`) を設定しました。手動実行は POST /v1/inventory/sync"
           " です。ログは /var/log/shop/sync.log に出ます。")
    t.end()


def _checkout_tests(out: list[dict[str, Any]]) -> None:
    t = _Thread(out, "u1", "checkout-tests", "2024-05-14T15:00:00", "claude-code")
    t.user_says("CI is red on main. Can you run the full test suite and find what broke?")
    e = t.run("pytest -v tests/", big_pytest_log(), exit_code=1)
    _plant(FAILING_NODE, e, "Which test failed in the big CI run?",
           "CI の全テストで落ちていたテストはどれ？", "u1")
    e = t.run(f"pytest {FAILING_NODE} -x -q",
              "F                                                                        [100%]\n"
              "=================================== FAILURES ===================================\n"
              "__________________________ test_apply_coupon_rounding __________________________\n\n"
              "    def test_apply_coupon_rounding():\n"
              ">       assert apply_coupon(3999, rate=0.5) == 2000\n"
              "E       AssertionError: assert 1999 == 2000\n\n"
              "tests/test_checkout.py:42: AssertionError\n"
              f"FAILED {FAILING_NODE} - AssertionError: assert 1999 == 2000\n1 failed in 0.31s",
              exit_code=1)
    _plant("AssertionError: assert 1999 == 2000", e,
           "What was the coupon rounding assertion error?",
           "クーポンの丸めテストのエラーメッセージは？", "u1")
    t.edit("src/shop/pricing.py",
           "--- a/src/shop/pricing.py\n+++ b/src/shop/pricing.py\n@@ -1,6 +1,8 @@\n"
           "+from decimal import ROUND_HALF_UP, Decimal\n+\n+ROUNDING = ROUND_HALF_UP\n"
           " def apply_coupon(total: int, rate: float) -> int:\n"
           "-    return int(total * (1 - rate))\n"
           "+    amount = Decimal(total) * (1 - Decimal(str(rate)))\n"
           "+    return int(amount.quantize(Decimal(\"1\"), rounding=ROUNDING))\n")
    t.run("pytest -q", f"{'.' * 80}\n{BIG_LOG_TESTS} passed in 41.88s", kind="test_result",
          exit_code=0)
    t.says("Fixed: apply_coupon used float math and truncated 1999.5 to 1999; it now uses Decimal "
           "with ROUND_HALF_UP. All 2000 tests pass.")
    t.end()


def _research(out: list[dict[str, Any]]) -> None:
    t = _Thread(out, "u1", "rate-limit-research", "2024-05-15T09:30:00", "researcher")
    t.user_says("Before we add rate limiting to the checkout API, find recent papers on adaptive "
                "rate limiting and token bucket fairness.")
    t.add("assistant", "tool_call", "arxiv adaptive rate limiting token bucket", tool="web_search")
    e = t.add("tool", "tool_result",
              "1. arXiv:2401.12345v2 — Adaptive Token Buckets for Multi-Tenant APIs\n"
              "2. arXiv:2310.06825 — Fair Queueing under Bursty Load\n"
              "3. arXiv:2205.01234 — A Survey of Admission Control", tool="web_search")
    _plant("arXiv:2401.12345v2", e, "Which paper on adaptive token buckets did we find?",
           "適応的トークンバケットの論文の arXiv ID は？", "u1")
    _plant("2310.06825", e, "What is the arXiv id of the fair queueing paper?",
           "フェアキューイングの論文の ID は？", "u1")
    t.says("The most relevant is 2401.12345 (adaptive token buckets); 2310.06825 covers fair "
           "queueing. I suggest a token bucket of 20 requests per second per user, burst 40.")
    e = t.user_says("OK, let's go with that. Put RATE_LIMIT_RPS=20 and RATE_LIMIT_BURST=40 "
                    "in the config.")
    _plant("RATE_LIMIT_RPS=20", e, "What rate limit did we decide for checkout?",
           "チェックアウトのレート制限はいくつに決めた？", "u1")
    t.edit("config/ratelimit.yaml", "rate_limit:\n  rps: 20\n  burst: 40\n  key: user_id\n")
    t.end()


def _pgbouncer(out: list[dict[str, Any]]) -> None:
    t = _Thread(out, "u1", "pgbouncer", "2024-05-15T11:00:00", "claude-code")
    t.user_says("We hit too many connections in prod. Put pgbouncer in front of postgres and "
                "point the app at it.")
    e = t.edit("docker-compose.yml",
               "--- a/docker-compose.yml\n+++ b/docker-compose.yml\n@@ -12,0 +13,6 @@\n"
               "+  pgbouncer:\n+    image: edoburu/pgbouncer:1.22.1\n+    ports:\n"
               "+      - \"6432:6432\"\n+    environment:\n+      DB_HOST: db\n")
    _plant("edoburu/pgbouncer:1.22.1", e, "Which pgbouncer image did we add?",
           "pgbouncer のイメージタグは？", "u1")
    e = t.edit(".env", "--- a/.env\n+++ b/.env\n@@ -1,2 +1,2 @@\n-DB_PORT=5432\n+DB_PORT=6432\n"
               "-DATABASE_URL=postgresql://shop:shop@localhost:5432/shop\n"
               "+DATABASE_URL=postgresql://shop:shop@localhost:6432/shop\n")
    _plant("DB_PORT=6432", e, "Which port does the app use for the database now?",
           "今アプリが DB に繋いでいるポートは？", "u1")
    t.run("npm run dev",
          "server listening on :3000\ndb pool ready (pgbouncer localhost:6432, max 20)")
    t.says("The app now connects through pgbouncer on port 6432 instead of postgres on 5432.")
    t.end()


def _auth_v2(out: list[dict[str, Any]]) -> None:
    t = _Thread(out, "u1", "auth-email-regex-v2", "2024-05-15T14:00:00", "codex")
    t.user_says("認証のメールアドレス正規表現で、連続ドットのアドレス (taro@example..jp) が"
                "通ってしまいます。直してください。")
    t.run("cat src/auth/validate-email.ts",
          f"export const EMAIL_RE = {REGEX_V1};\n\nexport function validateEmail(input: string)"
          ": boolean {\n  return EMAIL_RE.test(input.trim());\n}\n")
    e = t.edit("src/auth/validate-email.ts",
               "--- a/src/auth/validate-email.ts\n+++ b/src/auth/validate-email.ts\n"
               f"@@ -1 +1 @@\n-export const EMAIL_RE = {REGEX_V1};\n"
               f"+export const EMAIL_RE = {REGEX_V2};\n")
    _plant(REGEX_V2, e, "What is the current email regex after the double-dot fix?",
           "連続ドット対策後のメールアドレス正規表現は？", "u1")
    t.run("npm test -- validate-email",
          "PASS src/auth/validate-email.test.ts\n  validateEmail\n"
          "    ✓ accepts taro@example.co.jp (1 ms)\n    ✓ rejects taro@example..jp (1 ms)\n\n"
          "Tests:       3 passed, 3 total", kind="test_result", exit_code=0)
    t.says(f"正規表現を v2 に更新しました: `{REGEX_V2}`。"
           "連続ドットは拒否され、テストは全て成功です。")
    t.end()


def _tenant_u2(out: list[dict[str, Any]]) -> None:
    t = _Thread(out, "u2", "auth-email-regex", "2024-05-13T09:30:00", "claude-code")
    t.user_says("Fix the email validation in src/auth/validate-email.ts, it lets `a@b` through.")
    e = t.edit("src/auth/validate-email.ts",
               "-export const EMAIL_RE = /^.+@.+$/;\n"
               "+export const EMAIL_RE = /^\\S+@\\S+\\.\\S+$/;\n")
    _plant("/^\\S+@\\S+\\.\\S+$/", e, "What is the email validation regex?",
           "メールアドレスの正規表現は？", "u2")
    e = t.edit(".env", "+AUTH_ALLOWED_DOMAINS=example.org\n")
    _plant("AUTH_ALLOWED_DOMAINS=example.org", e, "Which domains are allowed to sign up?",
           "サインアップを許可したドメインは？", "u2")
    t.run("npm test -- validate-email", "Tests:       2 passed, 2 total", kind="test_result",
          exit_code=0)
    t.says("Updated EMAIL_RE; only example.org addresses are allowed.")
    t.end()
    t = _Thread(out, "u2", "db-setup", "2024-05-14T09:00:00", "claude-code")
    t.user_says("Spin up postgres for local dev on port 5433 please, and an hourly-ish sync job.")
    e = t.edit("docker-compose.yml",
               "services:\n  db:\n    image: postgres:15.6\n    ports:\n      - \"5433:5432\"\n")
    _plant("postgres:15.6", e, "Which postgres image tag do we run locally?",
           "ローカルの postgres のイメージタグは？", "u2")
    e = t.edit(".env", "+DB_PORT=5433\n")
    _plant("DB_PORT=5433", e, "Which port does the app use for the database?",
           "アプリが DB に繋いでいるポートは？", "u2")
    e = t.edit("deploy/crontab", "+0 */2 * * * python -m shop.jobs.sync_inventory\n")
    _plant("0 */2 * * *", e, "What is the cron schedule of the inventory sync?",
           "在庫同期の cron 式は？", "u2")
    t.says("Postgres 15.6 is on port 5433 and the sync runs every two hours.")
    t.end()


def golden_events() -> list[dict[str, Any]]:
    """All events of both tenants, each thread in index order (fresh copies each call)."""
    PLANTED.clear()
    out: list[dict[str, Any]] = []
    for build in (_auth_v1, _db_setup, _inventory_cron, _checkout_tests, _research,
                  _pgbouncer, _auth_v2, _tenant_u2):
        build(out)
    return out


def planted() -> list[dict[str, Any]]:
    """The planted values (builds the corpus once to fill them)."""
    golden_events()
    return list(PLANTED)


def write(directory: Path) -> None:
    """Write ``golden.jsonl`` (one event a line) and ``planted.json`` into ``directory``."""
    events = golden_events()
    lines = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events)
    (directory / "golden.jsonl").write_text(lines, encoding="utf-8")
    (directory / "planted.json").write_text(
        json.dumps({"planted": PLANTED, "changes": CHANGES}, ensure_ascii=False, indent=1) + "\n",
        encoding="utf-8",
    )


golden_events()  # fills PLANTED at import

if __name__ == "__main__":
    write(Path(__file__).with_name("data"))
