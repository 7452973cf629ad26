#!/usr/bin/env bash
# Runs a command with the project's Node.js (scripts/use-node.sh) first on PATH: `bash scripts/with-node.sh tsx x.ts`.
set -euo pipefail
source "$(dirname "$0")/use-node.sh"
exec "$@"
