# Sourced, not run: `source scripts/containers/engine.sh`. Makes a container engine usable by this project and
# exports what the other scripts and testcontainers need:
#   CONTAINER_ENGINE  podman or docker (the command)
#   DOCKER_HOST       the engine's Docker-compatible API socket (podman: a private `podman system service`)
#   CONTAINER_IMAGES  local (images built here from Debian packages; no registry needed) or official (mongo:7, ...)
# Docker is used when its daemon answers; otherwise podman (installed from Debian when missing and run as root),
# with the project's own containers.conf (no system file is changed). Every wait is bounded: a missing engine or
# socket ends with a message saying what to install, never a hang.
_containers_engine() {
  local root state sock i
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  state="$root/.tools/containers"
  mkdir -p "$state"
  _engine_fail() {
    printf '[containers] %s\n' "$@" >&2
    printf '[containers] %s\n' "Install podman (Debian/Ubuntu: apt-get install podman runc; see docs/containers.md) or Docker, then run this again." >&2
    return 1
  }

  if [ "${CONTAINER_ENGINE:-}" != "podman" ] && command -v docker >/dev/null 2>&1 && timeout 10 docker info >/dev/null 2>&1; then
    export CONTAINER_ENGINE=docker CONTAINER_IMAGES="${CONTAINER_IMAGES:-official}"
    return 0
  fi

  if ! command -v podman >/dev/null 2>&1; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "[containers] installing podman from Debian" >&2
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc >/dev/null; } >&2 ||
        { _engine_fail "no container engine: podman is not installed and apt-get could not install it."; return 1; }
    else
      _engine_fail "no container engine: neither a running Docker daemon nor podman was found."; return 1
    fi
  fi
  command -v runc >/dev/null 2>&1 || { _engine_fail "podman is installed but runc (its runtime in docs/containers.md) is not."; return 1; }

  # crun cannot set rlimits or use hybrid cgroups in these machines' sandbox: runc with cgroupfs and no limits.
  cat >"$state/containers.conf" <<'CONF'
[containers]
default_ulimits = []
pids_limit = 0
[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
CONF
  export CONTAINERS_CONF="$state/containers.conf" CONTAINER_ENGINE=podman CONTAINER_IMAGES="${CONTAINER_IMAGES:-local}"
  timeout 30 podman info >/dev/null 2>"$state/podman-info.err" ||
    { _engine_fail "podman does not work here: $(tail -1 "$state/podman-info.err")"; return 1; }

  # The Docker-compatible API for testcontainers: one private service per checkout, started once and reused.
  sock="$state/podman.sock"
  export DOCKER_HOST="unix://$sock"
  if ! timeout 5 curl -sf --unix-socket "$sock" http://d/_ping >/dev/null 2>&1; then
    rm -f "$sock"
    nohup podman system service --time=0 "unix://$sock" >"$state/podman-service.log" 2>&1 &
    echo $! >"$state/podman-service.pid"
    for i in $(seq 1 100); do
      timeout 5 curl -sf --unix-socket "$sock" http://d/_ping >/dev/null 2>&1 && break
      [ "$i" -eq 100 ] && { _engine_fail "podman's API socket did not answer at $sock (see $state/podman-service.log)."; return 1; }
      sleep 0.1
    done
  fi
  # Ryuk (testcontainers' reaper) comes from a registry: off; containers are removed by the code that starts them.
  export TESTCONTAINERS_RYUK_DISABLED=true
  # Published ports are bound on IPv4; "localhost" may resolve to ::1 first.
  export TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1
}
_containers_engine || { unset -f _containers_engine _engine_fail; return 1 2>/dev/null || exit 1; }
unset -f _containers_engine _engine_fail
