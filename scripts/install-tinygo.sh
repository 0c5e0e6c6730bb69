#!/usr/bin/env bash
# Installs TinyGo 0.41.1 built against Debian's LLVM 19, into the cache dir.
# Idempotent: prints the tinygo path and exits at once when already installed.
# There is no prebuilt TinyGo reachable here, so the compiler is built from the
# module proxy's copy of its source and seeded with Debian's wasi-libc and
# compiler-rt instead of building them (which would need their git submodules).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

VERSION=0.41.1
ROOT="$DG_CACHE/tinygo-$VERSION"
BIN="$ROOT/bin/tinygo"

seed_cache() {
  local cache
  cache="$("$BIN" env GOCACHE)"
  local libc="$cache/wasi-libc-wasm32-unknown-wasi-generic"
  local rt="$cache/compiler-rt-wasm32-unknown-wasi-generic"
  if [ ! -f "$libc/lib.a" ]; then
    mkdir -p "$libc"
    cp /usr/lib/wasm32-wasi/libc.a "$libc/lib.a"
    rm -rf "$libc/include"; cp -r /usr/include/wasm32-wasi "$libc/include"
  fi
  if [ ! -f "$rt/lib.a" ]; then
    mkdir -p "$rt"
    cp /usr/lib/llvm-19/lib/clang/19/lib/wasi/libclang_rt.builtins-wasm32.a "$rt/lib.a"
  fi
}

# put_in puts one of the project's files (under scripts/tinygo) into TinyGo's
# sources as dg_<name>, after the sed expressions that follow rename TinyGo's
# own definitions in the file beside it out of the way. Run on every call, so
# an installed TinyGo gets it too; build-functions.sh rebuilds modules when
# one of these files changes.
put_in() { # ours dir tinygo-file sed-expression...
  local ours dir=$ROOT/src/$2 file=$3
  ours="$(cd "$(dirname "$0")" && pwd)/tinygo/$1"
  local dest="$dir/dg_$(basename "$1")"
  shift 3
  if ! cmp -s "$ours" "$dest"; then
    sed -i "$@" "$dir/$file"
    cp "$ours" "$dest"
  fi
}

patch_tinygo() {
  # TinyGo's strings.IndexByte and bytes.IndexByte look at one byte per
  # step; the project's look at eight (tested with the Go tests).
  put_in bytealg/indexbyte.go internal/bytealg bytealg.go \
    -e 's/^func IndexByte(b \[\]byte, c byte) int {/func indexByteTinyGo(b []byte, c byte) int {/' \
    -e 's/^func IndexByteString(s string, c byte) int {/func indexByteStringTinyGo(s string, c byte) int {/'
  # TinyGo's append builtin is a call at every append at the -opt=s the
  # modules are built with; the project's is always inlined.
  put_in runtime/append.go runtime slice.go -e 's/^func sliceAppend(/func sliceAppendTinyGo(/'
}

apt_install llvm-19-dev libclang-19-dev clang-19 lld-19 libclang-rt-19-dev-wasm32 wasi-libc binaryen

if [ -x "$BIN" ] && "$BIN" version >/dev/null 2>&1; then
  seed_cache
  patch_tinygo
  echo "$BIN"
  exit 0
fi

log "building TinyGo $VERSION against LLVM 19 (about 2 minutes, once)"
src="$(go mod download -json "github.com/tinygo-org/tinygo@v$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[ -n "$src" ] || { log "could not download the TinyGo module"; exit 1; }
tmp="$ROOT.tmp"
rm -rf "$tmp"
cp -r "$src" "$tmp"
chmod -R u+w "$tmp"
mkdir -p "$tmp/src/net"   # a submodule that the module zip does not carry
(cd "$tmp" && GOFLAGS=-mod=mod go build -tags llvm19 -o bin/tinygo .)
rm -rf "$ROOT"
mv "$tmp" "$ROOT"
seed_cache
patch_tinygo
echo "$BIN"
