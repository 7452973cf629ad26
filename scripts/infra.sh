#!/usr/bin/env bash
# Starts (or reuses) the real infrastructure on loopback and writes its URLs to .infra/env.
#   scripts/infra.sh up      install what is missing, start what is not running (idempotent)
#   scripts/infra.sh down    stop everything this script started
#   scripts/infra.sh status  print what is running
#   scripts/infra.sh nats-server   only build nats-server (deploy/nats/VERSION) into .infra/bin (the local NATS image)
#   scripts/infra.sh credentials   only (re)issue the NATS credentials into $NATS_AUTH_DIR (Compose, test containers)
# MongoDB: MONGO_URL if set, else FerretDB v1.24.2 (built from the module source) on PostgreSQL.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
INFRA="$ROOT/.infra"
BIN="$INFRA/bin"
DATA="$INFRA/data"
LOGS="$INFRA/logs"
RUN="$INFRA/run"
mkdir -p "$BIN" "$DATA" "$LOGS" "$RUN"

NATS_PORT="${INFRA_NATS_PORT:-14222}"
REDIS_PORT="${INFRA_REDIS_PORT:-16379}"
PG_PORT="${INFRA_PG_PORT:-15432}"
FERRET_PORT="${INFRA_FERRET_PORT:-27117}"
FERRET_DEBUG_PORT="${INFRA_FERRET_DEBUG_PORT:-18088}"
FERRET_VERSION="v1.24.2"
# The one NATS server version everywhere: this script, the test kit, CI, the local images, Compose and the manifests.
NATS_VERSION="$(cat "$ROOT/deploy/nats/VERSION")"
NATS_AUTH_DIR="${NATS_AUTH_DIR:-$ROOT/.local/nats}"

log() { printf '[infra] %s\n' "$*" >&2; }

apt_install() {
  local missing=()
  for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing ${missing[*]} from Debian"
  local sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

pg_bin() {
  local d; d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  [ -n "$d" ] || { log "PostgreSQL binaries not found"; exit 1; }
  echo "$d"
}

alive() { [ -f "$RUN/$1.pid" ] && kill -0 "$(cat "$RUN/$1.pid")" 2>/dev/null; }

# Whether something accepts connections on host:port (the probe's descriptor lives and dies in its subshell).
port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

# Before starting a server: its port must be free, else another process has it (the infrastructure of another
# checkout, or a server of the machine) and this one would fail or, worse, the tests would use the other one.
port_free() { # port name variable
  if port_open 127.0.0.1 "$1"; then
    log "port $1 for $2 is taken by another process (another checkout's infrastructure? stop it with its 'scripts/infra.sh down', or choose another port with $3)"
    exit 1
  fi
}

wait_port() { # host port name
  for _ in $(seq 1 150); do
    port_open "$1" "$2" && return 0
    sleep 0.1
  done
  log "$3 did not open $1:$2 (see $LOGS/$3.log)"; tail -20 "$LOGS/$3.log" >&2 || true; exit 1
}

# nats-server from the Go module proxy (Debian's 2.9 lacks the JetStream permission features the bus relies on).
build_nats() {
  if [ -x "$BIN/nats-server" ] && [ "$("$BIN/nats-server" --version 2>/dev/null)" = "nats-server: $NATS_VERSION" ]; then return; fi
  command -v go >/dev/null || { log "Go is needed to build nats-server $NATS_VERSION"; exit 1; }
  log "building nats-server $NATS_VERSION from the Go module proxy (about 40 s, once)"
  GOBIN="$BIN" go install "github.com/nats-io/nats-server/v2@$NATS_VERSION"
}

# Credentials: keys kept in $NATS_AUTH_DIR (git-ignored), the server's auth.conf and a .creds file per identity,
# bus keys, issued again when deploy/nats/permissions.json, the server settings or libs/nats-auth changed;
# server.conf = deploy/nats.conf + auth.conf.
nats_credentials() {
  local want; want=$(cat "$ROOT/deploy/nats/permissions.json" "$ROOT/deploy/nats.conf" "$ROOT/libs/nats-auth/src/index.ts" | sha256sum | cut -c1-16)
  [ -f "$NATS_AUTH_DIR/.issued" ] && [ "$(cat "$NATS_AUTH_DIR/.issued")" = "$want" ] && return
  (cd "$ROOT" && node --import tsx scripts/nats-credentials.ts init --dir "$NATS_AUTH_DIR") >&2
  { cat "$ROOT/deploy/nats.conf"; printf '\ninclude "auth.conf"\n'; } >"$NATS_AUTH_DIR/server.conf"
  echo "$want" >"$NATS_AUTH_DIR/.issued"
  # A server already running reads the new permissions on a reload (SIGHUP), as after a revocation.
  if alive nats; then kill -HUP "$(cat "$RUN/nats.pid")" && log "nats-server reloaded with the credentials issued again"; fi
}

start_nats() {
  build_nats
  nats_credentials
  if alive nats; then return; fi
  port_free "$NATS_PORT" nats-server INFRA_NATS_PORT
  mkdir -p "$DATA/nats"
  "$BIN/nats-server" -c "$NATS_AUTH_DIR/server.conf" -js -sd "$DATA/nats" -a 127.0.0.1 -p "$NATS_PORT" -m $((NATS_PORT + 1000)) >"$LOGS/nats.log" 2>&1 &
  echo $! >"$RUN/nats.pid"
  wait_port 127.0.0.1 "$NATS_PORT" nats
  log "nats-server $NATS_VERSION (JetStream, JWT authentication) on 127.0.0.1:$NATS_PORT"
}

start_redis() {
  command -v redis-server >/dev/null || apt_install redis-server
  if alive redis; then return; fi
  port_free "$REDIS_PORT" redis-server INFRA_REDIS_PORT
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize no >"$LOGS/redis.log" 2>&1 &
  echo $! >"$RUN/redis.pid"
  wait_port 127.0.0.1 "$REDIS_PORT" redis
  log "redis-server on 127.0.0.1:$REDIS_PORT"
}

build_ferretdb() {
  [ -x "$BIN/ferretdb" ] && return
  command -v go >/dev/null || { log "Go is needed to build FerretDB"; exit 1; }
  log "building FerretDB $FERRET_VERSION from its module source (about 90 s, once)"
  local dir; dir=$(go mod download -json "github.com/FerretDB/FerretDB@$FERRET_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  local src="$INFRA/src/ferretdb"
  rm -rf "$src"; mkdir -p "$INFRA/src"; cp -r "$dir" "$src"; chmod -R u+w "$src"
  echo "$FERRET_VERSION" >"$src/build/version/version.txt"
  (cd "$src" && go build -o "$BIN/ferretdb.tmp" ./cmd/ferretdb)
  mv "$BIN/ferretdb.tmp" "$BIN/ferretdb"
}

start_postgres() {
  if alive postgres; then return; fi
  port_free "$PG_PORT" PostgreSQL INFRA_PG_PORT
  command -v initdb >/dev/null || [ -d /usr/lib/postgresql ] || apt_install postgresql
  local pgbin; pgbin=$(pg_bin)
  local pgdata="$DATA/postgres"
  local asuser=()
  if [ "$(id -u)" -eq 0 ]; then
    id postgres >/dev/null 2>&1 || useradd -r -m postgres
    chown -R postgres "$DATA" 2>/dev/null || true
    mkdir -p "$RUN/pgsock"; chown postgres "$RUN/pgsock" "$LOGS"
    asuser=(su postgres -s /bin/bash -c)
  else
    asuser=(bash -c)
    mkdir -p "$RUN/pgsock"
  fi
  if [ ! -f "$pgdata/PG_VERSION" ]; then
    log "initialising PostgreSQL in $pgdata"
    mkdir -p "$pgdata"; [ "$(id -u)" -eq 0 ] && chown postgres "$pgdata"
    "${asuser[@]}" "$pgbin/initdb -D '$pgdata' -U postgres --auth=trust -E UTF8 >/dev/null"
  fi
  # shared_buffers 1GB (was 256MB): after pnpm bench's write history the events table and its indexes pass 256MB.
  # Its effect on the write-growth rows is within their spread (docs/performance.md, "statistics and vacuum").
  "${asuser[@]}" "$pgbin/pg_ctl -D '$pgdata' -l '$LOGS/postgres.log' -w -o \"-p $PG_PORT -k $RUN/pgsock -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=450 -c shared_buffers=1GB\" start >/dev/null"
  head -1 "$pgdata/postmaster.pid" >"$RUN/postgres.pid"
  "$pgbin/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname='ferretdb'" | grep -q 1 ||
    "$pgbin/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -qc "CREATE DATABASE ferretdb" >/dev/null
  log "PostgreSQL on 127.0.0.1:$PG_PORT"
}

# Indexes FerretDB's filters can use, and planner settings (see the file's header); idempotent, on every start.
tune_postgres() {
  PGOPTIONS='-c client_min_messages=warning' "$(pg_bin)/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -d ferretdb \
    -qAt -v ON_ERROR_STOP=1 -f "$ROOT/scripts/sql/ferretdb-indexes.sql" >/dev/null
}

start_ferretdb() {
  build_ferretdb
  start_postgres
  tune_postgres
  if alive ferretdb; then return; fi
  port_free "$FERRET_PORT" FerretDB INFRA_FERRET_PORT
  mkdir -p "$DATA/ferretdb-state"
  "$BIN/ferretdb" --handler=postgresql --postgresql-url="postgres://postgres@127.0.0.1:$PG_PORT/ferretdb?pool_max_conns=400" \
    --listen-addr="127.0.0.1:$FERRET_PORT" --debug-addr="127.0.0.1:$FERRET_DEBUG_PORT" --telemetry=disable \
    --state-dir="$DATA/ferretdb-state" \
    --log-level=warn >"$LOGS/ferretdb.log" 2>&1 &
  echo $! >"$RUN/ferretdb.pid"
  wait_port 127.0.0.1 "$FERRET_PORT" ferretdb
  log "FerretDB $FERRET_VERSION (PostgreSQL backend) on 127.0.0.1:$FERRET_PORT"
}

up() {
  start_nats
  start_redis
  local mongo_url
  if [ -n "${MONGO_URL:-}" ]; then
    mongo_url="$MONGO_URL"; log "using MONGO_URL from the environment"
  else
    start_ferretdb
    mongo_url="mongodb://127.0.0.1:$FERRET_PORT/"
  fi
  cat >"$INFRA/env" <<ENV
NATS_URL=nats://127.0.0.1:$NATS_PORT
NATS_AUTH_DIR=$NATS_AUTH_DIR
REDIS_URL=redis://127.0.0.1:$REDIS_PORT
MONGO_URL=$mongo_url
ENV
  log "URLs written to .infra/env"
}

down() {
  for name in ferretdb redis nats; do
    if alive "$name"; then kill "$(cat "$RUN/$name.pid")" 2>/dev/null || true; fi
    rm -f "$RUN/$name.pid"
  done
  if [ -f "$DATA/postgres/postmaster.pid" ]; then
    local pgbin; pgbin=$(pg_bin)
    if [ "$(id -u)" -eq 0 ]; then su postgres -s /bin/bash -c "$pgbin/pg_ctl -D '$DATA/postgres' -m fast stop >/dev/null" || true
    else "$pgbin/pg_ctl" -D "$DATA/postgres" -m fast stop >/dev/null || true; fi
  fi
  rm -f "$RUN/postgres.pid" "$INFRA/env"
  log "stopped"
}

status() {
  for name in nats redis postgres ferretdb; do
    if alive "$name"; then echo "$name: running (pid $(cat "$RUN/$name.pid"))"; else echo "$name: stopped"; fi
  done
  [ -f "$INFRA/env" ] && cat "$INFRA/env"
}

case "${1:-up}" in
  up) up ;;
  down) down ;;
  status) status ;;
  nats-server) build_nats ;;
  credentials) nats_credentials ;;
  *) echo "usage: $0 up|down|status|nats-server|credentials" >&2; exit 2 ;;
esac
