#!/bin/bash
# The image's HEALTHCHECK: GET /healthz on PORT answers 200. Plain bash (/dev/tcp), no second Node
# process: starting one every interval cost seconds of CPU on a busy machine.
host="${HOST:-127.0.0.1}"
[ "$host" = "0.0.0.0" ] && host=127.0.0.1
[ "$host" = "::" ] && host=::1
exec 3<>"/dev/tcp/$host/${PORT:-3000}" || exit 1
printf 'GET /healthz HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' "$host" >&3
read -r -t 2 _ status _ <&3 || exit 1
[ "$status" = "200" ]
