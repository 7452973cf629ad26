#!/usr/bin/env bash
# Installs what the repository needs and is missing: Node.js 24, pnpm, then the workspace's packages.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
log() { printf '[setup] %s\n' "$*" >&2; }

# Node.js 24 (the project's own copy in .tools/, see scripts/use-node.sh).
source scripts/use-node.sh

PNPM_VERSION=$(node -p 'require("./package.json").packageManager.split("@")[1]')
if ! command -v pnpm >/dev/null 2>&1 || [ "$(pnpm --version 2>/dev/null)" != "$PNPM_VERSION" ]; then
  log "installing pnpm $PNPM_VERSION"
  npm install -g "pnpm@$PNPM_VERSION" >/dev/null 2>&1 || { corepack enable && corepack prepare "pnpm@$PNPM_VERSION" --activate; }
fi

stamp="node_modules/.install-stamp"
want=$(sha256sum pnpm-lock.yaml package.json | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  log "installing packages (pnpm install)"
  # Quiet when it works; a failed install (a registry hiccup) is tried once more with its output shown.
  if ! CI=true pnpm install --frozen-lockfile --reporter=silent; then
    log "pnpm install failed; trying once more"
    CI=true pnpm install --frozen-lockfile
  fi
  echo "$want" >"$stamp"
fi
