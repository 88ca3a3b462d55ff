#!/usr/bin/env bash
# Installs Debian's headless browser for the dashboard browser tests (idempotent); `make
# test` runs it, as it runs infra/services.sh.
#   bash infra/browser.sh        # chromium + chromium-driver from Debian, if missing
# Prints the paths it found and how long it took. Needs root or sudo-free apt-get (as
# MariaDB does) when the browser is missing; says so in one line when it cannot install.
set -euo pipefail

start=$(date +%s)
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  echo "browser: chromium and chromedriver already installed"
else
  command -v apt-get >/dev/null 2>&1 || {
    echo "browser: chromium/chromedriver missing and no apt-get here: install Chromium and" \
      "its WebDriver (chromium, chromedriver on PATH) for the browser tests" >&2; exit 1; }
  export DEBIAN_FRONTEND=noninteractive
  log="${TMPDIR:-/tmp}/breadcrumb-browser-apt.log"
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends \
      chromium chromium-driver fonts-dejavu-core; } >"$log" 2>&1 || {
    tail -n 20 "$log" >&2
    echo "browser: apt-get failed (needs root or sudo-free apt-get; log $log): as root," \
      "apt-get install chromium chromium-driver" >&2; exit 1; }
fi
echo "browser: $(command -v chromium) ($(chromium --version 2>/dev/null || echo 'version unknown'))"
echo "browser: $(command -v chromedriver)"
echo "browser: done in $(( $(date +%s) - start ))s"
