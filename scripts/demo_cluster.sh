#!/usr/bin/env bash
# Cluster-mode demo: Kafka + MariaDB + S3 from infra/, one `breadcrumb worker --serve-api`,
# 20 simulated coding agents publishing for a minute, then /v1/stats and the dashboard.
#
#   bash scripts/demo_cluster.sh [--stop]
#
# Environment (all optional): DEMO_AGENTS (20), DEMO_SECONDS (60), DEMO_RATE (2 events/s
# per agent), DEMO_VIA (http: through the API | kafka: the SDK straight to Kafka),
# DEMO_WAIT (180 s for the backlog), DEMO_DIR (.breadcrumb/cluster-demo), and any
# BREADCRUMB_* setting (PORT, TOPIC_PREFIX, WORKER_ID, MYSQL_DATABASE, EMBEDDER, ...). The worker keeps running after the demo so
# the dashboard stays live; `--stop` stops it at the end. The services stay up
# (`bash infra/services.sh down` stops them).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# the project virtualenv that `make` creates, else whatever python3 is on PATH
if [[ -z "${PYTHON:-}" && -x "$REPO/.venv/bin/python" ]]; then PYTHON="$REPO/.venv/bin/python"; fi
PYTHON="${PYTHON:-python3}"
AGENTS="${DEMO_AGENTS:-20}"
SECONDS_TO_RUN="${DEMO_SECONDS:-60}"
RATE="${DEMO_RATE:-2}"
VIA="${DEMO_VIA:-http}"
DEMO_DIR="${DEMO_DIR:-$REPO/.breadcrumb/cluster-demo}"
PORT="${BREADCRUMB_PORT:-8765}"
URL="http://127.0.0.1:$PORT"
STOP_AT_END=0
[[ "${1:-}" == "--stop" ]] && STOP_AT_END=1

say() { echo "[demo] $*"; }
die() { echo "[demo] ERROR: $*" >&2; exit 1; }
cli() { PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}" "$PYTHON" -m breadcrumb.cli "$@"; }
healthy() { "$PYTHON" - "$URL" <<'EOF'
import sys, httpx
try:
    sys.exit(0 if httpx.get(sys.argv[1] + "/healthz", timeout=2).status_code == 200 else 1)
except httpx.HTTPError:
    sys.exit(1)
EOF
}
stats() { "$PYTHON" -c 'import json, sys, httpx; print(json.dumps(httpx.get(sys.argv[1] + "/v1/stats", timeout=30).json(), indent=2))' "$URL"; }
# wait_drained URL SECONDS: poll /v1/stats until pending == 0, printing progress.
wait_drained() { "$PYTHON" - "$1" "$2" <<'EOF'
import sys, time, httpx
url, deadline = sys.argv[1], time.monotonic() + float(sys.argv[2])
last = -100.0
while True:
    pending = httpx.get(url + "/v1/stats", timeout=30).json()["pending"]
    if pending == 0 or time.monotonic() > deadline:
        break
    if time.monotonic() - last > 10:
        print(f"[demo]   pending {pending}", flush=True)
        last = time.monotonic()
    time.sleep(1)
print(f"[demo]   pending {pending}" + ("" if pending == 0 else " (still processing; the "
      "dashboard shows the rest)"), flush=True)
EOF
}

say "1/5 services (Kafka, MariaDB, S3)"
bash "$REPO/infra/services.sh" up

say "2/5 worker + API on $URL (cluster mode, data in $DEMO_DIR)"
mkdir -p "$DEMO_DIR"
export BREADCRUMB_MODE=cluster BREADCRUMB_DATA_DIR="$DEMO_DIR" BREADCRUMB_PORT="$PORT"
PIDFILE="$DEMO_DIR/worker.pid"
if [[ -s "$PIDFILE" ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null && healthy; then
  say "worker already running (pid $(cat "$PIDFILE"))"
else
  healthy && die "something else already answers on $URL; set BREADCRUMB_PORT"
  # Faust keeps its table state in ./<worker_id>-data: run the worker inside DEMO_DIR.
  (cd "$DEMO_DIR" && PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}" \
     exec "$PYTHON" -m breadcrumb.cli worker --serve-api >"$DEMO_DIR/worker.log" 2>&1) &
  echo $! >"$PIDFILE"
  for ((i = 0; i < 240; i++)); do
    healthy && break
    kill -0 "$(cat "$PIDFILE")" 2>/dev/null || { tail -40 "$DEMO_DIR/worker.log"; die "worker exited"; }
    sleep 0.5
  done
  healthy || { tail -40 "$DEMO_DIR/worker.log"; die "worker did not come up in 120 s"; }
  say "worker up (pid $(cat "$PIDFILE"), log $DEMO_DIR/worker.log)"
fi

say "3/5 fleet: $AGENTS agents x $SECONDS_TO_RUN s at $RATE events/s each, via $VIA"
if [[ "$VIA" == "kafka" ]]; then
  TARGET=(--kafka "${BREADCRUMB_KAFKA_BOOTSTRAP:-127.0.0.1:9092}")
else
  TARGET=(--http "$URL")
fi
cli fleet --agents "$AGENTS" --seconds "$SECONDS_TO_RUN" --rate "$RATE" "${TARGET[@]}" \
  | tee "$DEMO_DIR/fleet-report.json"

WAIT="${DEMO_WAIT:-180}"
say "4/5 waiting for the worker to process everything (pending -> 0, at most $WAIT s)"
wait_drained "$URL" "$WAIT"
say "/v1/stats:"
stats

say "5/5 open $URL/dashboard to watch the fleet (memories, lag, dead letters)"
say "try: breadcrumb recall \"which env var did the agents set?\" --user fleet-user-0 --url $URL"
if [[ "$STOP_AT_END" == "1" ]]; then
  kill "$(cat "$PIDFILE")" && rm -f "$PIDFILE"
  say "worker stopped (services left running)"
else
  say "the worker keeps running; stop it with: kill \$(cat $PIDFILE)"
fi
