#!/bin/sh
# Redis with the password REDIS_PASSWORD, read from standard input so that it does not show in the
# process list; further arguments (--port, --bind) are passed on. Nothing is persisted: the service
# keeps nothing in Redis that it cannot lose (event fan-out hints, counters, WebSocket tickets).
set -eu
if [ -z "${REDIS_PASSWORD:-}" ]; then
  echo "REDIS_PASSWORD is not set" >&2
  exit 78
fi
exec redis-server - "$@" <<CONFIG
requirepass "$REDIS_PASSWORD"
save ""
appendonly no
CONFIG
