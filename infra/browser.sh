#!/usr/bin/env bash
# Installs Debian's headless browser for the dashboard browser test (idempotent).
#   bash infra/browser.sh        # chromium + chromium-driver from Debian, if missing
# Prints the paths it found and how long it took. Needs root (CI runs as root).
set -euo pipefail

start=$(date +%s)
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  echo "browser: chromium and chromedriver already installed"
else
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends chromium chromium-driver fonts-dejavu-core >/dev/null
fi
echo "browser: $(command -v chromium) ($(chromium --version 2>/dev/null || echo 'version unknown'))"
echo "browser: $(command -v chromedriver)"
echo "browser: done in $(( $(date +%s) - start ))s"
