#!/bin/sh
# First start (empty data directory): initdb, then the service's own role GATS_DB_USER (LOGIN, no
# SUPERUSER, no CREATEDB, no CREATEROLE) owning the database GATS_DB_NAME, password GATS_DB_PASSWORD.
# The superuser `postgres` has no password: it logs in only through the container's Unix socket
# (docker compose exec postgres psql). Then runs postgres with the given arguments (-c port=...).
set -eu
: "${GATS_DB_USER:=gats}" "${GATS_DB_NAME:=gats}"
if [ -z "${GATS_DB_PASSWORD:-}" ]; then
  echo "GATS_DB_PASSWORD is not set" >&2
  exit 78
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  initdb -D "$PGDATA" -U postgres --auth-local=peer --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 >/dev/null
  pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -c unix_socket_directories=/var/run/postgresql" -w start >/dev/null
  psql -v ON_ERROR_STOP=1 -q -U postgres -d postgres \
    -v user="$GATS_DB_USER" -v password="$GATS_DB_PASSWORD" -v db="$GATS_DB_NAME" <<'SQL'
CREATE ROLE :"user" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION PASSWORD :'password';
CREATE DATABASE :"db" OWNER :"user";
REVOKE ALL ON DATABASE :"db" FROM PUBLIC;
SQL
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  echo "postgres-entrypoint: database \"$GATS_DB_NAME\" created, owned by role \"$GATS_DB_USER\" (no superuser)"
fi
exec postgres -D "$PGDATA" "$@"
