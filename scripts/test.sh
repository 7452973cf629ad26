#!/usr/bin/env bash
# npm test: installs what is missing, starts the real infrastructure, then runs every check and test.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
bash scripts/ensure-tools.sh
bash scripts/infra.sh up
echo "[test] typecheck"
pnpm exec tsc -p tsconfig.json
echo "[test] OpenAPI document matches deploy/openapi.json"
pnpm exec tsx scripts/openapi.ts check
echo "[test] jest"
pnpm exec jest "$@"
