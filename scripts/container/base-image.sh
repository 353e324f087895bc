#!/usr/bin/env bash
# Makes the standard base image the Dockerfiles name (ARG BASE, default debian:bookworm-slim)
# available where no registry can be reached: when the image is missing and cannot be pulled, it is
# built from Debian's packages with debootstrap (minbase, about 2 minutes) and imported under that
# name. It is kept between runs on purpose (the container test reuses it). Usage: base-image.sh [NAME]
set -euo pipefail
DOCKER=/usr/bin/docker
name="${1:-debian:bookworm-slim}"
if "$DOCKER" image inspect "$name" >/dev/null 2>&1; then
  echo "base image $name: present"
  exit 0
fi
if timeout 60 "$DOCKER" pull -q "$name" >/dev/null 2>&1; then
  echo "base image $name: pulled"
  exit 0
fi
suite="${name#*:}"
suite="${suite%%-*}"
rootfs="$(mktemp -d "${TMPDIR:-/tmp}/gats-rootfs.XXXXXX")"
trap 'rm -rf "$rootfs"' EXIT
echo "base image $name: building from Debian's packages (debootstrap $suite)"
debootstrap --variant=minbase "$suite" "$rootfs" http://deb.debian.org/debian >"$rootfs.log" 2>&1 \
  || { tail -n 20 "$rootfs.log" >&2; exit 1; }
rm -f "$rootfs.log"
# As in Debian's own images: no apt lists or caches in the layer.
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin
tar -C "$rootfs" -c . | "$DOCKER" import -c 'CMD ["bash"]' - "$name" >/dev/null
echo "base image $name: imported ($("$DOCKER" image inspect --format '{{.Size}}' "$name") bytes)"
