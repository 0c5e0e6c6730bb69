#!/usr/bin/env bash
# Installs what the console's browser tests need: Debian's Chromium (apt)
# and playwright-core (npm, exact pin from console/test's
# package-lock.json; it downloads no browser of its own). Idempotent: when
# both are in place it prints the path of Chromium and exits at once.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

DIR="$(cd "$(dirname "$0")/../console/test" && pwd)"
STAMP="$DIR/node_modules/.dg-lock-sha256"

apt_install chromium
command -v node >/dev/null && command -v npm >/dev/null || apt_install nodejs npm

want="$(cat "$DIR/package.json" "$DIR/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$want" ] || [ ! -d "$DIR/node_modules/playwright-core" ]; then
  log "npm ci in console/test (playwright-core)"
  mkdir -p "$DG_CACHE/npm"
  (cd "$DIR" && npm ci --cache "$DG_CACHE/npm" --prefer-offline --no-audit --no-fund --loglevel=error >&2)
  echo "$want" > "$STAMP"
fi
command -v chromium
