#!/usr/bin/env bash
# Fills the build context of the Containerfile (default build/container):
# a static gateway (SQLite, which it reaches through cgo, linked in; Go's
# own DNS resolver and user lookup, so nothing asks for glibc's NSS
# modules, which a static binary cannot load), the function modules from
# build/functions (run `make functions` first), the CA bundle of this
# machine, and an empty data/ for the volume's mount point.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/container}
ca=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
ls build/functions/*.wasm >/dev/null 2>&1 || { echo "no build/functions/*.wasm: run make functions" >&2; exit 1; }
[ -f "$ca" ] || { echo "no CA bundle at $ca (set CA_BUNDLE)" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out/functions" "$out/data" "$out/etc/ssl/certs"
CGO_ENABLED=1 ${GO:-go} build -trimpath -tags 'netgo osusergo sqlite_omit_load_extension' \
  -ldflags="-s -w -linkmode external -extldflags=-static" -o "$out/gateway" ./wasm-host/cmd/gateway
cp build/functions/*.wasm "$out/functions/"
cp "$ca" "$out/etc/ssl/certs/ca-certificates.crt"
echo "$out"
