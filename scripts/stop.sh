#!/usr/bin/env bash
# npm run stop: stops the infrastructure scripts/infra.sh started (services stop with Ctrl-C of npm start).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
if [ -f "$ROOT/.local/stack.pid" ] && kill -0 "$(cat "$ROOT/.local/stack.pid")" 2>/dev/null; then
  kill "$(cat "$ROOT/.local/stack.pid")" && sleep 2
fi
bash "$ROOT/scripts/infra.sh" down
