#!/usr/bin/env bash
# Dev/CI infrastructure for Breadcrumb's cluster mode: Kafka (KRaft), MariaDB, S3.
#
#   bash infra/services.sh up|down|status
#
# Everything (data, pids, logs) lives under one folder, .infra/ at the repo root
# (override with BREADCRUMB_INFRA_DIR); every service binds 127.0.0.1 only.
# `up` and `down` are idempotent. `up` also declares Breadcrumb's Kafka topics.
#
# This file also holds the helpers that kafka.sh, mariadb.sh and s3.sh source.
set -euo pipefail

INFRA_SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$INFRA_SRC/.." && pwd)"
INFRA_DIR="${BREADCRUMB_INFRA_DIR:-$REPO_ROOT/.infra}"
# the project virtualenv that `make` creates, else whatever python3 is on PATH
if [[ -z "${PYTHON:-}" && -x "$REPO_ROOT/.venv/bin/python" ]]; then PYTHON="$REPO_ROOT/.venv/bin/python"; fi
PYTHON="${PYTHON:-python3}"

log() { echo "[infra] $*"; }
die() { echo "[infra] ERROR: $*" >&2; exit 1; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# pid_alive PIDFILE MARKER: true when the pid in PIDFILE runs and its command line
# contains MARKER (so a stale pid reused by another process is not mistaken for ours).
pid_alive() {
  local pidfile="$1" marker="$2" pid
  [[ -s "$pidfile" ]] || return 1
  pid="$(cat "$pidfile")"
  [[ -r "/proc/$pid/cmdline" ]] || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF -- "$marker"
}

# port_open PORT: true when something accepts TCP connections on 127.0.0.1:PORT.
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# wait_port PORT SECONDS PIDFILE MARKER LOGFILE: wait for PORT; fail early if the process died.
wait_port() {
  local port="$1" secs="$2" pidfile="$3" marker="$4" logfile="$5" i gone=0
  for ((i = 0; i < secs * 10; i++)); do
    port_open "$port" && return 0
    # /proc/PID/cmdline can read empty for an instant while a wrapper execs the real
    # binary: only a process missing on 5 checks in a row (0.5 s) has really died.
    if pid_alive "$pidfile" "$marker"; then
      gone=0
    elif ((++gone >= 5)); then
      tail -n 30 "$logfile" >&2 || true
      die "process for port $port exited during start (log: $logfile)"
    fi
    sleep 0.1
  done
  tail -n 30 "$logfile" >&2 || true
  die "port $port not open after ${secs}s (log: $logfile)"
}

# stop_pid PIDFILE MARKER NAME [SECONDS]: TERM, wait, then KILL; no-op when not running.
stop_pid() {
  local pidfile="$1" marker="$2" name="$3" secs="${4:-30}" pid i
  if ! pid_alive "$pidfile" "$marker"; then
    rm -f "$pidfile"
    log "$name: not running"
    return 0
  fi
  pid="$(cat "$pidfile")"
  kill -TERM "$pid"
  for ((i = 0; i < secs * 10; i++)); do
    [[ -d "/proc/$pid" ]] || break
    sleep 0.1
  done
  if [[ -d "/proc/$pid" ]]; then
    log "$name: still running after ${secs}s, sending KILL to $pid"
    kill -KILL "$pid"
  fi
  rm -f "$pidfile"
  log "$name: stopped"
}

# ensure_port_free PORT NAME: refuse to start when a foreign process holds the port.
ensure_port_free() {
  if port_open "$1"; then
    die "$2: 127.0.0.1:$1 is already in use by a process not started from $INFRA_DIR"
  fi
}

services_up() {
  local t0 t
  t0="$(now)"
  mkdir -p "$INFRA_DIR"
  t="$(now)"; bash "$INFRA_SRC/kafka.sh" up;   log "kafka up in $(elapsed "$t")s"
  t="$(now)"; bash "$INFRA_SRC/mariadb.sh" up; log "mariadb up in $(elapsed "$t")s"
  t="$(now)"; bash "$INFRA_SRC/s3.sh" up;      log "s3 up in $(elapsed "$t")s"
  t="$(now)"
  (cd "$REPO_ROOT" && "$PYTHON" -m breadcrumb.infra.topic_admin \
    --bootstrap "${BREADCRUMB_KAFKA_BOOTSTRAP:-127.0.0.1:9092}" \
    --prefix "${BREADCRUMB_TOPIC_PREFIX:-}" \
    --partitions "${BREADCRUMB_KAFKA_PARTITIONS:-3}")
  log "topics declared in $(elapsed "$t")s"
  log "all services up in $(elapsed "$t0")s (data, pids, logs under $INFRA_DIR)"
}

services_down() {
  # Reverse order; each stop is a no-op when that service is not running.
  bash "$INFRA_SRC/s3.sh" down
  bash "$INFRA_SRC/mariadb.sh" down
  bash "$INFRA_SRC/kafka.sh" down
}

services_status() {
  local rc=0
  bash "$INFRA_SRC/kafka.sh" status || rc=1
  bash "$INFRA_SRC/mariadb.sh" status || rc=1
  bash "$INFRA_SRC/s3.sh" status || rc=1
  return "$rc"
}

main() {
  case "${1:-}" in
    up) services_up ;;
    down) services_down ;;
    status) services_status ;;
    *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
  esac
}

# Run only when executed, not when sourced by kafka.sh / mariadb.sh / s3.sh.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
