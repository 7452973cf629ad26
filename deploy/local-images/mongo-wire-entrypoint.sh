#!/bin/bash
# PostgreSQL on a private socket, then FerretDB in front of it; SIGTERM stops both in order.
set -euo pipefail
PGBIN=/usr/lib/postgresql/15/bin
PGDATA=/data/db/postgres
if [ ! -f "$PGDATA/PG_VERSION" ]; then
  "$PGBIN/initdb" -D "$PGDATA" -U postgres --auth=trust -E UTF8 >/dev/null
fi
"$PGBIN/pg_ctl" -D "$PGDATA" -w -s -l /tmp/postgres.log \
  -o "-k /tmp -c listen_addresses='' -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=450 -c shared_buffers=128MB" start
"$PGBIN/psql" -h /tmp -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname='ferretdb'" | grep -q 1 ||
  "$PGBIN/psql" -h /tmp -U postgres -qc "CREATE DATABASE ferretdb"
PGOPTIONS='-c client_min_messages=warning' "$PGBIN/psql" -h /tmp -U postgres -d ferretdb -qAt -v ON_ERROR_STOP=1 \
  -f /usr/local/share/ferretdb/indexes.sql >/dev/null
/usr/local/bin/ferretdb --handler=postgresql --postgresql-url="postgres://postgres@/ferretdb?host=/tmp&pool_max_conns=400" \
  --listen-addr=0.0.0.0:27017 --debug-addr=127.0.0.1:8088 --telemetry=disable --state-dir=/tmp --log-level=warn &
ferret=$!
stop() { kill -TERM "$ferret" 2>/dev/null || true; wait "$ferret" || true; "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -s stop; exit 0; }
trap stop TERM INT
wait "$ferret"
"$PGBIN/pg_ctl" -D "$PGDATA" -m fast -s stop
exit 1
