#!/usr/bin/env bash
# Offline checks of the deployment files (run by npm test through test/tooling/deploy-manifests.test.ts):
#   1. renders each kustomize overlay (deploy/k8s/overlays/*) and validates every object against the Kubernetes
#      schemas (kubernetes-validate --strict: unknown fields are errors), plus deploy/k8s/secret.example.yaml;
#   2. validates docker-compose.yml against the Compose specification's JSON schema (check-jsonschema's copy).
# Rendered manifests go to .infra/deploy/<overlay>.yaml (the jest test reads them for its policy checks).
# Installs what is missing: the validators into the git-ignored virtualenv .infra/venv (PyPI), and kustomize
# (Go module) when no kubectl is on the machine.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
OUT="$ROOT/.infra/deploy"
VENV="$ROOT/.infra/venv"
BIN="$ROOT/.infra/bin"
KUBERNETES_VERSION="${KUBERNETES_VERSION:-1.32.0}"
KUSTOMIZE_VERSION="v5.5.0"
mkdir -p "$OUT" "$BIN"
log() { printf '[deploy] %s\n' "$*" >&2; }

# --- validators (PyPI, pinned in deploy/validate-requirements.txt) ---
stamp="$VENV/.requirements-stamp"
want=$(sha256sum deploy/validate-requirements.txt | cut -c1-16)
if [ ! -x "$VENV/bin/kubernetes-validate" ] || [ ! -x "$VENV/bin/check-jsonschema" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  log "installing kubernetes-validate and check-jsonschema into .infra/venv"
  if [ ! -x "$VENV/bin/python" ] && ! python3 -m venv "$VENV" 2>/dev/null; then
    log "installing python3-venv (Debian)"
    sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-venv >/dev/null
    rm -rf "$VENV"; python3 -m venv "$VENV"
  fi
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -r deploy/validate-requirements.txt
  echo "$want" >"$stamp"
fi

# --- kustomize: kubectl's built-in one, else a kustomize binary, else build it from its Go module ---
render() {
  if command -v kubectl >/dev/null 2>&1; then kubectl kustomize "$1"
  elif command -v kustomize >/dev/null 2>&1; then kustomize build "$1"
  else "$BIN/kustomize" build "$1"
  fi
}
if ! command -v kubectl >/dev/null 2>&1 && ! command -v kustomize >/dev/null 2>&1 && [ ! -x "$BIN/kustomize" ]; then
  if command -v go >/dev/null 2>&1; then
    log "no kubectl: building kustomize $KUSTOMIZE_VERSION from its Go module into .infra/bin"
    GOBIN="$BIN" go install "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
  else
    log "FAILED: neither kubectl, kustomize nor Go is available to render deploy/k8s (install kubectl)"
    exit 1
  fi
fi

failed=0
# --- 1. Kubernetes manifests ---
for dir in deploy/k8s/overlays/*/; do
  overlay=$(basename "$dir")
  file="$OUT/$overlay.yaml"
  if ! render "$dir" >"$file"; then
    log "FAILED: kustomize could not render overlay $overlay"; failed=1; continue
  fi
  count=$(grep -c '^kind:' "$file" || true)
  if "$VENV/bin/kubernetes-validate" --strict --quiet --kubernetes-version "$KUBERNETES_VERSION" "$file"; then
    log "ok: overlay $overlay ($count objects) validates against the Kubernetes $KUBERNETES_VERSION schemas"
  else
    log "FAILED: overlay $overlay does not validate"; failed=1
  fi
done
if "$VENV/bin/kubernetes-validate" --strict --quiet --kubernetes-version "$KUBERNETES_VERSION" deploy/k8s/secret.example.yaml; then
  log "ok: deploy/k8s/secret.example.yaml validates"
else
  log "FAILED: deploy/k8s/secret.example.yaml does not validate"; failed=1
fi

# --- 2. docker-compose.yml ---
if "$VENV/bin/check-jsonschema" --builtin-schema vendor.compose-spec docker-compose.yml >/dev/null; then
  log "ok: docker-compose.yml validates against the Compose specification schema"
else
  "$VENV/bin/check-jsonschema" --builtin-schema vendor.compose-spec docker-compose.yml >&2 || true
  log "FAILED: docker-compose.yml does not validate"; failed=1
fi

exit "$failed"
