#!/usr/bin/env bash
# pnpm bench: starts the infrastructure (or uses NATS_URL/REDIS_URL/MONGO_URL when all are set), builds the service
# bundles, starts a private stack and measures every hot path beside a bare node:http server. See docs/performance.md.
set -euo pipefail
source "$(dirname "$0")/prepare.sh"
if [ -z "${NATS_URL:-}" ] || [ -z "${REDIS_URL:-}" ] || [ -z "${MONGO_URL:-}" ]; then
  bash scripts/infra.sh up
fi
node scripts/build-service.mjs
exec node --import tsx scripts/bench/main.ts "$@"
