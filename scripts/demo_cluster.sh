#!/usr/bin/env bash
# Cluster-mode demo, the quick start of docs/cluster.md: Kafka + MariaDB + S3 from infra/,
# `breadcrumb worker` and `breadcrumb serve` as two processes, 20 simulated coding agents
# publishing for a minute, then a wait until the fleet is processed (with progress), the
# stats with freshness, and a recall of a value one agent set, checked in its evidence.
#
#   bash scripts/demo_cluster.sh [--stop]
#
# Environment (all optional): DEMO_AGENTS (20), DEMO_SECONDS (60), DEMO_RATE (2 events/s
# per agent), DEMO_VIA (http: through serve | kafka: the SDK straight to Kafka),
# DEMO_WAIT (1800: give up waiting for the backlog after this many seconds), DEMO_DIR
# (.breadcrumb/cluster-demo), and any BREADCRUMB_* setting (PORT, TOPIC_PREFIX, WORKER_ID,
# MYSQL_DATABASE, EMBEDDER, ...). Worker and serve keep running after the demo so the
# dashboard stays live; `--stop` stops them at the end. The services stay up
# (`bash infra/services.sh down` stops them); services already answering are used as is.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# the project virtualenv that `make` creates, else whatever python3 is on PATH
if [[ -z "${PYTHON:-}" && -x "$REPO/.venv/bin/python" ]]; then PYTHON="$REPO/.venv/bin/python"; fi
PYTHON="${PYTHON:-python3}"
AGENTS="${DEMO_AGENTS:-20}"
SECONDS_TO_RUN="${DEMO_SECONDS:-60}"
RATE="${DEMO_RATE:-2}"
VIA="${DEMO_VIA:-http}"
WAIT="${DEMO_WAIT:-1800}"
DEMO_DIR="${DEMO_DIR:-$REPO/.breadcrumb/cluster-demo}"
PORT="${BREADCRUMB_PORT:-8765}"
URL="http://127.0.0.1:$PORT"
SEED="${DEMO_SEED:-$(date +%s)}"  # known thread ids for the closing recall; new each run
STOP_AT_END=0
[[ "${1:-}" == "--stop" ]] && STOP_AT_END=1

say() { echo "[demo] $*"; }
die() { echo "[demo] ERROR: $*" >&2; exit 1; }
cli() { PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}" "$PYTHON" -m breadcrumb.cli "$@"; }
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
healthy() { "$PYTHON" - "$URL" <<'EOF'
import sys, httpx
try:
    sys.exit(0 if httpx.get(sys.argv[1] + "/healthz", timeout=2).status_code == 200 else 1)
except httpx.HTTPError:
    sys.exit(1)
EOF
}
alive() { [[ -s "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }
# start NAME ARGS...: run `breadcrumb ARGS` in DEMO_DIR, its pid in NAME.pid, log NAME.log
start() {
  local name="$1"; shift
  (cd "$DEMO_DIR" && PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}" \
     exec "$PYTHON" -m breadcrumb.cli "$@" >"$DEMO_DIR/$name.log" 2>&1) &
  echo $! >"$DEMO_DIR/$name.pid"
}

say "1/6 services (Kafka, MariaDB, S3)"
if port_open "${BREADCRUMB_KAFKA_PORT:-9092}" && port_open "${BREADCRUMB_MYSQL_PORT:-3306}"; then
  say "Kafka and MariaDB already answer: using them"
else
  bash "$REPO/infra/services.sh" up
fi

say "2/6 worker + serve on $URL (cluster mode, two processes, data in $DEMO_DIR)"
mkdir -p "$DEMO_DIR"
export BREADCRUMB_MODE=cluster BREADCRUMB_DATA_DIR="$DEMO_DIR" BREADCRUMB_PORT="$PORT"
if alive "$DEMO_DIR/worker.pid" && alive "$DEMO_DIR/serve.pid" && healthy; then
  say "worker and serve already running (pids $(cat "$DEMO_DIR/worker.pid"), $(cat "$DEMO_DIR/serve.pid"))"
else
  healthy && die "something else already answers on $URL; set BREADCRUMB_PORT"
  start worker worker
  start serve serve
  for ((i = 0; i < 480; i++)); do
    healthy && grep -q "Worker ready" "$DEMO_DIR/worker.log" && break
    for p in worker serve; do
      alive "$DEMO_DIR/$p.pid" || { tail -5 "$DEMO_DIR/$p.log"; die "$p exited (log $DEMO_DIR/$p.log)"; }
    done
    sleep 0.5
  done
  healthy || die "serve did not answer in 240 s (log $DEMO_DIR/serve.log)"
  say "worker pid $(cat "$DEMO_DIR/worker.pid"), serve pid $(cat "$DEMO_DIR/serve.pid") (logs in $DEMO_DIR)"
fi

say "3/6 fleet: $AGENTS agents x $SECONDS_TO_RUN s at $RATE events/s each, via $VIA (seed $SEED)"
if [[ "$VIA" == "kafka" ]]; then
  TARGET=(--kafka "${BREADCRUMB_KAFKA_BOOTSTRAP:-127.0.0.1:9092}")
else
  TARGET=(--http "$URL")
fi
cli fleet --agents "$AGENTS" --seconds "$SECONDS_TO_RUN" --rate "$RATE" --seed "$SEED" \
  "${TARGET[@]}" >"$DEMO_DIR/fleet-report.json"
FLEET_DONE="$(date +%s.%N)"
"$PYTHON" - "$DEMO_DIR/fleet-report.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"[demo]   sent {r['events_sent']}, accepted {r['accepted']}, errors {r['errors']}, "
      f"{r['accepted_per_second']} events/s")
EOF

say "4/6 waiting until the fleet is processed (pending -> 0; gives up after $WAIT s)"
STATUS=0  # 3: the backlog did not drain in DEMO_WAIT; 4: the recall missed the value
"$PYTHON" - "$URL" "$WAIT" "$FLEET_DONE" <<'EOF' || STATUS=$?
import sys, time, httpx
url, wait, fleet_done = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
started = time.time()
last_print, first = 0.0, None
while True:
    try:
        stats = httpx.get(url + "/v1/stats", timeout=30).json()
        pending = int(stats["pending"])
    except (httpx.HTTPError, KeyError, ValueError) as exc:
        print(f"[demo]   stats unavailable ({exc}); retrying", flush=True)
        time.sleep(2)
        continue
    now = time.time()
    first = first or (now, pending)
    if pending == 0:
        print(f"[demo]   drained: pending 0, {now - fleet_done:.0f} s after the fleet "
              f"stopped", flush=True)
        break
    if now - started > wait:
        print(f"[demo]   still pending {pending} after {wait:.0f} s: giving up waiting "
              "(the worker keeps going; the dashboard shows the rest)", flush=True)
        sys.exit(3)
    if now - last_print >= 10:
        # the worker commits in batches (DERIVE_BATCH_ENTRIES): pending falls in steps,
        # so the rate is over the whole wait, not the last seconds
        done = first[1] - pending
        rate = done / (now - first[0]) if now > first[0] else 0.0
        eta = (f", about {pending / rate:.0f} s to go at that rate" if rate > 0
               else " (the worker is on its first batch)")
        print(f"[demo]   pending {pending}, {stats.get('events_processed', '?')} processed, "
              f"{rate:.1f} events/s{eta} ({now - fleet_done:.0f} s since the fleet stopped)",
              flush=True)
        last_print = now
    time.sleep(1)
EOF

say "5/6 /v1/stats (freshness: accepted -> recallable / -> memory)"
"$PYTHON" - "$URL" <<'EOF'
import json, sys, httpx
stats = httpx.get(sys.argv[1] + "/v1/stats", timeout=30).json()
fresh = stats.get("freshness", {})
keys = ("events_received", "events_accepted", "events_processed", "memories", "pending",
        "dead_letters", "dead_lettered", "retries", "consumer_lag")
print(json.dumps({k: stats[k] for k in keys if k in stats}, indent=2))
print("[demo]   freshness:", json.dumps(fresh))
EOF

say "6/6 recall: a value one agent set, asked in the fleet's own words"
if [[ "$STATUS" == "0" ]]; then
"$PYTHON" - "$URL" "$SEED" <<'EOF' || STATUS=$?
import re, sys, httpx
url, seed = sys.argv[1], sys.argv[2]
user, thread = "fleet-user-0", f"seed{seed}-a000-s0001"
events = httpx.get(f"{url}/v1/threads/{thread}/events", params={"user_id": user},
                   timeout=30).json()
TASK = r"^(\w+) in \S+ breaks under load\. Set (\w+)=(\S+) and"
func, env, value = re.search(TASK, events[0]["content"]).groups()
# a later session of the same user may set the same variable again: that is a change of
# the same setting (supersession), and recall must answer with the newest value
current, newest = value, events[0]["ts"]
listed, after = [], None
while True:
    page = httpx.get(f"{url}/v1/threads", timeout=30,
                     params={"user_id": user, "limit": 200, **({"after": after} if after else {})}
                     ).json()
    listed += page["threads"]
    after = page.get("next_after")
    if not after:
        break
for other in listed:
    first = httpx.get(f"{url}/v1/threads/{other['thread_id']}/events",
                      params={"user_id": user, "start": 0, "end": 0}, timeout=30).json()
    again = re.search(TASK, first[0]["content"]) if first else None
    if again and again.group(2) == env and first[0]["ts"] > newest:
        current, newest = again.group(3), first[0]["ts"]
query = f"what default value did we give {env} in {func}?"
print(f"[demo]   {user}: {query}  (agent 0 set {env}={value} in thread {thread}"
      + (f"; a later session set it to {current}" if current != value else "") + ")")
value = current
answer = httpx.post(f"{url}/v1/recall", json={"user_id": user, "query": query},
                    timeout=120).json()
for mem in answer["memories"][:3]:
    rng = mem["source_range"]
    print(f"[demo]   memory {rng['thread_id']} [{rng['start_index']}..{rng['end_index']}] "
          f"score {mem['score']:.3f}")
found = False
for ev in answer["evidence"]:
    print(f"[demo]   evidence from {ev['source_thread_id']} "
          f"[{ev['source_start_index']}..{ev['source_end_index']}]:")
    for line in ev["extracted_text"].splitlines():
        print(f"[demo]     | {line}")
    found = found or value in ev["extracted_text"]
print(f"[demo]   the value {value} is {'IN' if found else 'NOT in'} the evidence "
      f"({answer['latency_ms']} ms, {answer['token_cost']} tokens)")
sys.exit(0 if found else 4)
EOF
fi

say "open $URL/dashboard to watch the fleet (memories, lag, dead letters)"
if [[ "$STOP_AT_END" == "1" ]]; then
  for p in serve worker; do kill "$(cat "$DEMO_DIR/$p.pid")" && rm -f "$DEMO_DIR/$p.pid"; done
  say "worker and serve stopped (services left running)"
else
  say "worker and serve keep running; stop them with: kill \$(cat $DEMO_DIR/worker.pid) \$(cat $DEMO_DIR/serve.pid)"
fi
exit "$STATUS"
