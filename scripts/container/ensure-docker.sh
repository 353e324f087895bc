#!/usr/bin/env bash
# Makes a container daemon available for the container test (.ci/run): installs Debian's docker.io,
# docker-compose, debootstrap and prometheus (promtool) when missing, and starts dockerd when no
# daemon answers, without a bridge (every container uses the host's network; STACK.md). Exit 0: a
# daemon answers; exit 3: none can be started here (the container test then skips, saying why).
set -uo pipefail
DOCKER=/usr/bin/docker
missing=()
[ -x "$DOCKER" ] && command -v dockerd >/dev/null || missing+=(docker.io)
command -v docker-compose >/dev/null || missing+=(docker-compose)
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v promtool >/dev/null || missing+=(prometheus)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]}"
  if ! { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"; } >/tmp/gats-ensure-docker-apt.log 2>&1; then
    echo "could not install ${missing[*]} (see /tmp/gats-ensure-docker-apt.log)" >&2
    [ -x "$DOCKER" ] || exit 3
  fi
fi
if "$DOCKER" info >/dev/null 2>&1; then
  echo "docker daemon: $("$DOCKER" info --format '{{.ServerVersion}}') answers"
  exit 0
fi
if ! command -v dockerd >/dev/null; then
  echo "no dockerd here" >&2
  exit 3
fi
log=/var/log/gats-dockerd.log
echo "starting dockerd (log: $log)"
nohup dockerd --bridge=none --iptables=false --ip-masq=false >"$log" 2>&1 &
for _ in $(seq 1 60); do
  if "$DOCKER" info >/dev/null 2>&1; then
    echo "docker daemon: $("$DOCKER" info --format '{{.ServerVersion}}') started (pid $!)"
    exit 0
  fi
  if ! kill -0 $! 2>/dev/null; then break; fi
  sleep 1
done
echo "dockerd did not start here: $(tail -n 3 "$log" | tr '\n' ' ')" >&2
exit 3
