#!/bin/bash
# The image's HEALTHCHECK: GET /healthz answers 200 on the management listener when MANAGEMENT_PORT
# is set (the probes are served there, and 404 on PORT), else on PORT. Plain bash (/dev/tcp), no
# second Node process: starting one every interval cost seconds of CPU on a busy machine.
if [ -n "${MANAGEMENT_PORT:-}" ]; then
  host="${MANAGEMENT_HOST:-127.0.0.1}"
  port="$MANAGEMENT_PORT"
else
  host="${HOST:-127.0.0.1}"
  port="${PORT:-3000}"
fi
[ "$host" = "0.0.0.0" ] && host=127.0.0.1
[ "$host" = "::" ] && host=::1
exec 3<>"/dev/tcp/$host/$port" || exit 1
printf 'GET /healthz HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' "$host" >&3
read -r -t 2 _ status _ <&3 || exit 1
[ "$status" = "200" ]
