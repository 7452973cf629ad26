#!/usr/bin/env bash
# npm start: the local development stack. Installs what is missing, starts NATS, Redis and the database,
# builds and starts every service behind the gateway, prints the URLs and the admin credential.
set -euo pipefail
source "$(dirname "$0")/prepare.sh"
bash scripts/infra.sh up
node scripts/build-service.mjs >/dev/null
exec pnpm exec tsx scripts/dev-stack.ts "$@"
