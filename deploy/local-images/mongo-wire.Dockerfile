# A MongoDB-wire server for machines where mongo:7 cannot be pulled: FerretDB v1.24.2 (the binary scripts/infra.sh
# builds) on Debian's PostgreSQL 15, as in development and tests. Listens on 27017; data in /data/db.
FROM localhost/debian:bookworm
RUN apt-get update -qq && apt-get install -y -qq postgresql-15 >/dev/null && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /data/db && chown postgres:postgres /data/db
COPY ferretdb /usr/local/bin/ferretdb
COPY ferretdb-indexes.sql /usr/local/share/ferretdb/indexes.sql
COPY mongo-wire-entrypoint.sh /usr/local/bin/mongo-wire
USER postgres
EXPOSE 27017
ENTRYPOINT ["/usr/local/bin/mongo-wire"]
