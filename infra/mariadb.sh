#!/usr/bin/env bash
# A private MariaDB instance (stand-in for MySQL/TiDB) for dev and CI.
#
#   bash infra/mariadb.sh up|down|status
#
# Installs mariadb-server from Debian only when mysqld is missing. Runs with --no-defaults
# so no system config, datadir (/var/lib/mysql) or default socket is touched:
# datadir $INFRA_DIR/mariadb/data, socket $INFRA_DIR/mariadb/mysqld.sock, 127.0.0.1:3306
# (BREADCRUMB_MYSQL_PORT: a private instance for fault tests, with its own INFRA_DIR).
# Databases `breadcrumb` and `breadcrumb_test`, user breadcrumb/breadcrumb (@127.0.0.1, @%).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=services.sh
source "$(dirname "${BASH_SOURCE[0]}")/services.sh"

DB_DIR="$INFRA_DIR/mariadb"
DATA="$DB_DIR/data"
LOGDIR="$DB_DIR/log"
SOCK="$DB_DIR/mysqld.sock"
# A unix socket path is limited to 107 bytes: a deep checkout falls back to /tmp.
if (( ${#SOCK} > 100 )); then
  SOCK="/tmp/breadcrumb-mysqld-$(echo "$DB_DIR" | sha1sum | cut -c1-12).sock"
fi
PIDFILE="$DB_DIR/mysqld.pid"
PORT="${BREADCRUMB_MYSQL_PORT:-3306}"
MARKER="--socket=$SOCK"

find_mysqld() { command -v mariadbd || command -v mysqld || ls /usr/sbin/mariadbd 2>/dev/null; }

install_mariadb() {
  [[ -n "$(find_mysqld)" ]] && return 0
  log "mariadb: mysqld missing, installing mariadb-server from Debian"
  # Keep Debian from starting the system service (it would take port 3306).
  local policy=/usr/sbin/policy-rc.d added=0
  if [[ ! -e "$policy" ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && added=1
  fi
  apt-get update -q >"$LOGDIR/apt.log" 2>&1
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q mariadb-server mariadb-client \
    >>"$LOGDIR/apt.log" 2>&1 || { tail -n 30 "$LOGDIR/apt.log" >&2; die "mariadb: apt-get failed"; }
  if [[ "$added" == 1 ]]; then rm -f "$policy"; fi
  [[ -n "$(find_mysqld)" ]] || die "mariadb: installed but no mysqld/mariadbd found"
}

init_datadir() {
  [[ -d "$DATA/mysql" ]] && return 0
  log "mariadb: initialising $DATA"
  mariadb-install-db --no-defaults --user=root --datadir="$DATA" \
    --auth-root-authentication-method=socket --skip-test-db >"$LOGDIR/install-db.log" 2>&1 \
    || { tail -n 30 "$LOGDIR/install-db.log" >&2; die "mariadb: mariadb-install-db failed"; }
}

sql() { mariadb --no-defaults --protocol=socket --socket="$SOCK" -uroot "$@"; }

create_databases() {
  sql <<'EOF'
CREATE DATABASE IF NOT EXISTS breadcrumb CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
CREATE DATABASE IF NOT EXISTS breadcrumb_test CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
CREATE USER IF NOT EXISTS 'breadcrumb'@'127.0.0.1' IDENTIFIED BY 'breadcrumb';
CREATE USER IF NOT EXISTS 'breadcrumb'@'localhost' IDENTIFIED BY 'breadcrumb';
CREATE USER IF NOT EXISTS 'breadcrumb'@'%' IDENTIFIED BY 'breadcrumb';
GRANT ALL PRIVILEGES ON breadcrumb.* TO 'breadcrumb'@'127.0.0.1', 'breadcrumb'@'localhost', 'breadcrumb'@'%';
GRANT ALL PRIVILEGES ON breadcrumb_test.* TO 'breadcrumb'@'127.0.0.1', 'breadcrumb'@'localhost', 'breadcrumb'@'%';
-- replay builds generation G of database breadcrumb in breadcrumb__G
GRANT ALL PRIVILEGES ON `breadcrumb\_\_%`.* TO 'breadcrumb'@'127.0.0.1', 'breadcrumb'@'localhost', 'breadcrumb'@'%';
-- tests create their own throw-away databases named bc_test_<something>
GRANT ALL PRIVILEGES ON `bc\_test\_%`.* TO 'breadcrumb'@'127.0.0.1', 'breadcrumb'@'localhost', 'breadcrumb'@'%';
FLUSH PRIVILEGES;
EOF
}

wait_ready() {
  local i
  wait_port "$PORT" 60 "$PIDFILE" "$MARKER" "$LOGDIR/error.log"
  for ((i = 0; i < 100; i++)); do
    sql -e 'SELECT 1' >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  die "mariadb: no answer on $SOCK (log: $LOGDIR/error.log)"
}

mariadb_up() {
  local t0 mysqld
  t0="$(now)"
  mkdir -p "$DB_DIR" "$LOGDIR"
  if pid_alive "$PIDFILE" "$MARKER"; then
    log "mariadb: already running (pid $(cat "$PIDFILE"))"
    return 0
  fi
  ensure_port_free "$PORT" mariadb
  install_mariadb
  mysqld="$(find_mysqld)"
  init_datadir
  rm -f "$SOCK"
  nohup "$mysqld" --no-defaults --user=root --datadir="$DATA" \
    --bind-address=127.0.0.1 --port="$PORT" --socket="$SOCK" --pid-file="$DB_DIR/mysqld.server.pid" \
    --log-error="$LOGDIR/error.log" --character-set-server=utf8mb4 \
    --collation-server=utf8mb4_unicode_ci --skip-name-resolve \
    --innodb-buffer-pool-size=128M >>"$LOGDIR/stdout.log" 2>&1 </dev/null &
  echo $! >"$PIDFILE"
  wait_ready
  create_databases
  log "mariadb: up on 127.0.0.1:$PORT (pid $(cat "$PIDFILE")), started in $(elapsed "$t0")s"
}

mariadb_status() {
  if pid_alive "$PIDFILE" "$MARKER" && port_open "$PORT"; then
    echo "mariadb: up (127.0.0.1:$PORT, socket $SOCK, pid $(cat "$PIDFILE"))"
  else
    echo "mariadb: down"
    return 1
  fi
}

case "${1:-}" in
  up) mariadb_up ;;
  down) stop_pid "$PIDFILE" "$MARKER" mariadb 60 ;;
  status) mariadb_status ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
