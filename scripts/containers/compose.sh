#!/usr/bin/env bash
# docker-compose.yml with whatever engine this machine has: `bash scripts/containers/compose.sh up -d`, `... down`.
# Docker: `docker compose`. podman: podman-compose (PyPI, put in .tools/podman-compose on first use) with
# deploy/compose.local-images.yml on top when the images are the local ones (run scripts/containers/images.sh first).
# Arguments go to compose after the -f options (global options such as -p and --env-file come first).
# First the NATS credentials docker-compose.yml mounts: `pnpm nats:credentials init --dir .local/nats` when they are
# missing (or deploy/nats/permissions.json changed since; scripts/infra.sh credentials), keys kept.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
source scripts/use-node.sh
source scripts/containers/engine.sh

creds="$ROOT/.local/nats"
NATS_AUTH_DIR="$creds" bash scripts/infra.sh credentials
# Each service's container runs as user 1000 and reads only its own two files (mounted read-only): the nine services'
# .creds and .key files are readable (0644) inside a directory only its owner may enter (0700), which keeps them
# private on this machine. The set's keys (state.json), auth.conf and admin.creds stay 0600.
chmod 700 "$creds"
for identity in $(node -p "Object.keys(require('./deploy/nats/permissions.json').identities).join(' ')"); do
  chmod 644 "$creds/$identity.creds" "$creds/$identity.key"
done
files=(-f docker-compose.yml)
[ "$CONTAINER_IMAGES" = local ] && files+=(-f deploy/compose.local-images.yml)
if [ "$CONTAINER_ENGINE" = docker ]; then exec docker compose "${files[@]}" "$@"; fi
pc="${PODMAN_COMPOSE:-$ROOT/.tools/podman-compose/bin/podman-compose}"
if [ ! -x "$pc" ]; then
  echo "[compose] installing podman-compose 1.6.0 (PyPI) into .tools/podman-compose" >&2
  { python3 -m venv .tools/podman-compose && .tools/podman-compose/bin/pip install -q podman-compose==1.6.0; } >&2 ||
    { echo "[compose] could not install podman-compose: install python3-venv (Debian) or podman-compose, then run again" >&2; exit 1; }
fi
exec "$pc" "${files[@]}" "$@"
