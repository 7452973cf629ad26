#!/usr/bin/env bash
# npm test: installs what is missing, starts the real infrastructure, then runs every check and test.
set -euo pipefail
source "$(dirname "$0")/prepare.sh"
bash scripts/infra.sh up
echo "[test] pnpm check: typecheck, lint, format, import boundaries, subjects, service list, OpenAPI/AsyncAPI snapshots, config table, NATS permissions, bench tables"
pnpm check
# The analytics view test drives headless Chromium (Debian package; playwright's own browser download is not used).
if ! command -v chromium >/dev/null 2>&1; then
  echo "[test] installing chromium (Debian)"
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
fi
echo "[test] jest"
pnpm exec jest "$@"
