#!/usr/bin/env bash
# pnpm test:containers: the platform in containers, end to end (CI runs it after npm test). See docs/containers.md.
#   1. a container engine (podman here, installed from Debian when missing; Docker where its daemon runs)
#   2. images: the platform's image from deploy/Dockerfile (and, without a registry, its base and the infrastructure
#      images from Debian packages); its size and the time one service takes from start to ready are printed
#   3. Compose: docker-compose.yml up, the README's quick start, a SIGTERM drain, down (scripts/containers/compose-smoke.ts)
#   4. jest with TEST_INFRA=containers: NATS, Redis and the database from testcontainers, for a representative set
#      of test files (CONTAINER_TESTS overrides the list; arguments are passed to jest)
# SKIP_COMPOSE=1 or SKIP_CONTAINER_TESTS=1 leave out step 3 or 4.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
source scripts/use-node.sh
bash scripts/ensure-tools.sh
source scripts/containers/engine.sh
log() { printf '[test:containers] %s\n' "$*" >&2; }
log "engine: $CONTAINER_ENGINE ($CONTAINER_IMAGES images), API socket ${DOCKER_HOST:-default}"

bash scripts/containers/images.sh all

# The smoke prints the start times: the whole stack to a ready gateway, and one service restarted to ready.
size=$($CONTAINER_ENGINE image inspect --format '{{.Size}}' agent-platform:local | awk '{printf "%d MB", $1/1000000}')
log "image agent-platform:local: $size"

if [ "${SKIP_COMPOSE:-}" != "1" ]; then
  log "Compose smoke"
  pnpm exec tsx scripts/containers/compose-smoke.ts
fi

if [ "${SKIP_CONTAINER_TESTS:-}" != "1" ]; then
  tests=${CONTAINER_TESTS:-"libs/testkit/test/nats-auth.test.ts test/manage/api-keys.test.ts test/events/path.test.ts test/webhooks/delivery.test.ts test/run/events.test.ts"}
  log "jest with TEST_INFRA=containers: $tests"
  # shellcheck disable=SC2086
  TEST_INFRA=containers pnpm exec jest $tests "$@"
fi
log "passed"
