#!/usr/bin/env bash
# docker-compose.yml with whatever engine this machine has: `bash scripts/containers/compose.sh up -d`, `... down`.
# Docker: `docker compose`. podman: podman-compose (PyPI, put in .tools/podman-compose on first use) with
# deploy/compose.local-images.yml on top when the images are the local ones (run scripts/containers/images.sh first).
# Arguments go to compose after the -f options (global options such as -p and --env-file come first).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
source scripts/containers/engine.sh
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
