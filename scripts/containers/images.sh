#!/usr/bin/env bash
# Builds the container images `pnpm test:containers`, Compose and the container-backed tests use, each only when it is
# missing or its inputs changed (a label carries a hash of them), so a second run builds nothing it can reuse.
#   scripts/containers/images.sh [base|infra|app|all]   (default all)
# CONTAINER_IMAGES=local (podman here): Debian base from mmdebstrap, a stand-in for node:24-bookworm-slim tagged with
# that name, NATS from the nats-server scripts/infra.sh builds (deploy/nats/VERSION), Redis and the MongoDB-wire
# server from Debian packages (FerretDB: the binary scripts/infra.sh builds). CONTAINER_IMAGES=official (Docker with a
# registry): nothing but the platform's own image; node, mongo, nats and redis come from the registry.
# The platform image is always `agent-platform:local` (the name docker-compose.yml uses), from deploy/Dockerfile.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
source scripts/use-node.sh
source scripts/containers/engine.sh
STATE="$ROOT/.tools/containers"
LOCAL="$ROOT/deploy/local-images"
NODE_IMAGE="docker.io/library/node:24-bookworm-slim"
NPM_VERSION="11.6.0"
NATS_VERSION="$(cat deploy/nats/VERSION)"
export NATS_IMAGE_LOCAL="localhost/platform-nats:${NATS_VERSION#v}" REDIS_IMAGE_LOCAL="localhost/platform-redis:7.0" MONGO_IMAGE_LOCAL="localhost/platform-mongo-wire:1.24"
E="$CONTAINER_ENGINE"
FMT=(); [ "$E" = podman ] && FMT=(--format docker) # keeps HEALTHCHECK (OCI images have none)
log() { printf '[images] %s\n' "$*" >&2; }

hash_of() { cat "$@" | sha256sum | cut -c1-16; }
label_of() { $E image inspect --format '{{ index .Labels "platform.inputs" }}' "$1" 2>/dev/null || true; }

# build TAG DOCKERFILE CONTEXT HASH: builds unless TAG exists with that input hash.
build_if_changed() {
  local tag="$1" file="$2" ctx="$3" want="$4"
  if [ "$(label_of "$tag")" = "$want" ]; then log "$tag is up to date"; return; fi
  log "building $tag"
  local t0=$SECONDS
  $E build "${FMT[@]}" --label "platform.inputs=$want" -f "$file" -t "$tag" "$ctx" >"$STATE/build-$(basename "$file").log" 2>&1 ||
    { tail -30 "$STATE/build-$(basename "$file").log" >&2; log "building $tag failed (log: $STATE/build-$(basename "$file").log)"; exit 1; }
  log "built $tag in $((SECONDS - t0)) s"
}

base() {
  if ! $E image inspect localhost/debian:bookworm >/dev/null 2>&1; then
    command -v mmdebstrap >/dev/null || { log "installing mmdebstrap from Debian"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap >/dev/null; }
    local mirror; mirror="$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)"
    log "making a Debian bookworm base image with mmdebstrap (${mirror:-http://deb.debian.org/debian}, about a minute)"
    # minbase, merged /usr made by mmdebstrap's hook (the usrmerge package would bring 50 MB of perl), no recommends,
    # no manuals, documentation or translations (these settings stay in force in images built on it).
    mmdebstrap --quiet --variant=minbase --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr --aptopt='APT::Install-Recommends "false"' \
      --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
      --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
      bookworm "$STATE/debian-rootfs.tar" "${mirror:-http://deb.debian.org/debian}" >"$STATE/mmdebstrap.log" 2>&1 ||
      { tail -20 "$STATE/mmdebstrap.log" >&2; log "mmdebstrap failed (log: $STATE/mmdebstrap.log)"; exit 1; }
    $E import "$STATE/debian-rootfs.tar" localhost/debian:bookworm >/dev/null
    rm -f "$STATE/debian-rootfs.tar"
  fi
  # The node image: this checkout's Node 24 binary (scripts/use-node.sh), npm from the registry, the CA bundle.
  local ctx="$STATE/ctx-node"
  rm -rf "$ctx"; mkdir -p "$ctx/rootfs/usr/local/bin" "$ctx/rootfs/usr/local/lib/node_modules" "$ctx/rootfs/etc/ssl/certs"
  cp "$(command -v node)" "$ctx/rootfs/usr/local/bin/node"
  if [ ! -f "$STATE/npm-$NPM_VERSION.tgz" ]; then (cd "$STATE" && npm pack --silent "npm@$NPM_VERSION" >/dev/null); fi
  tar xzf "$STATE/npm-$NPM_VERSION.tgz" -C "$ctx/rootfs/usr/local/lib/node_modules" && mv "$ctx/rootfs/usr/local/lib/node_modules/package" "$ctx/rootfs/usr/local/lib/node_modules/npm"
  if [ -f /etc/ssl/certs/ca-certificates.crt ]; then cp /etc/ssl/certs/ca-certificates.crt "$ctx/rootfs/etc/ssl/certs/"; fi
  cp "$LOCAL/node.Dockerfile" "$ctx/Dockerfile"
  build_if_changed "$NODE_IMAGE" "$ctx/Dockerfile" "$ctx" "$(hash_of "$ctx/Dockerfile" "$ctx/rootfs/usr/local/bin/node" "$STATE/npm-$NPM_VERSION.tgz" "$ctx/rootfs/etc/ssl/certs/"*)"
}

infra() {
  # NATS: the same nats-server binary scripts/infra.sh runs (built once from the Go module proxy, kept in .infra/bin).
  bash scripts/infra.sh nats-server
  local nctx="$STATE/ctx-nats"
  rm -rf "$nctx"; mkdir -p "$nctx"
  cp .infra/bin/nats-server "$nctx/"
  build_if_changed "$NATS_IMAGE_LOCAL" "$LOCAL/nats.Dockerfile" "$nctx" "$(hash_of "$LOCAL/nats.Dockerfile" "$nctx/nats-server")"
  build_if_changed "$REDIS_IMAGE_LOCAL" "$LOCAL/redis.Dockerfile" "$LOCAL" "$(hash_of "$LOCAL/redis.Dockerfile")"
  # FerretDB: the binary scripts/infra.sh builds from the module source (and keeps in .infra/bin).
  if [ ! -x .infra/bin/ferretdb ]; then log "FerretDB is not built yet: scripts/infra.sh up builds it"; bash scripts/infra.sh up; fi
  local ctx="$STATE/ctx-mongo-wire"
  rm -rf "$ctx"; mkdir -p "$ctx"
  cp .infra/bin/ferretdb scripts/sql/ferretdb-indexes.sql "$LOCAL/mongo-wire-entrypoint.sh" "$ctx/"
  build_if_changed "$MONGO_IMAGE_LOCAL" "$LOCAL/mongo-wire.Dockerfile" "$ctx" "$(hash_of "$LOCAL/mongo-wire.Dockerfile" "$ctx/"*)"
}

# The platform's image: always handed to the engine, whose layer cache makes an unchanged tree a quick no-op.
app() {
  log "building agent-platform:local from deploy/Dockerfile"
  local t0=$SECONDS
  # A second try when the first fails: `pnpm fetch` inside a build container sometimes exhausts its retries on DNS
  # answers (EAI_AGAIN) on a loaded machine; the layers that were built are reused.
  local try
  for try in 1 2; do
    $E build "${FMT[@]}" -f deploy/Dockerfile -t agent-platform:local . >"$STATE/build-app.log" 2>&1 && break
    tail -30 "$STATE/build-app.log" >&2
    [ "$try" -eq 2 ] && { log "building agent-platform:local failed (log: $STATE/build-app.log)"; exit 1; }
    log "building agent-platform:local failed; trying once more"
  done
  log "agent-platform:local ready in $((SECONDS - t0)) s, $($E image inspect --format '{{.Size}}' agent-platform:local | awk '{printf "%d MB", $1/1000000}')"
}

what="${1:-all}"
if [ "$CONTAINER_IMAGES" = local ]; then
  case "$what" in base) base ;; infra) base; infra ;; app) base; app ;; all) base; infra; app ;; *) echo "usage: $0 [base|infra|app|all]" >&2; exit 2 ;; esac
else
  case "$what" in base|infra) ;; app|all) app ;; *) echo "usage: $0 [base|infra|app|all]" >&2; exit 2 ;; esac
fi
