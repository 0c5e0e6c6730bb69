#!/usr/bin/env bash
# Compiles every function (functions/<name>/wasm) and the host's test guests
# (wasm-host/testdata/guests/<name>) to WASI reactor modules with TinyGo, and
# prints each module's size. A module is rebuilt only when Go sources it may
# depend on (shared/, its own folder, go.mod) are newer than it.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
TINYGO="$(bash scripts/install-tinygo.sh)"
# -gc=leaking: a bump allocator whose allocations the host throws away after
# every call by putting back the globals and heap init left (schema/abi.md,
# "The arena"; shared/guest/arena.go). A request handler keeps nothing alive,
# so no collector runs: a ledger round trip measured 34 µs with TinyGo's
# conservative collector, 5.5 µs without.
# -opt=s: every start validates and hashes the whole decision module before
# wazero's cache can answer, so its size is the cold start's largest part.
# Built for size it has 216 KB of code instead of 286 KB and compiles from
# the cache in 9.4-10.3 ms instead of 12.8-14.6 ms (BenchmarkCompile/decide,
# three alternations on the 2-core Xeon), for 10-12% more time in the guests' code on a medium
# decision, about 4% of the host's CPU; the append builtin TinyGo then left
# out of line is put back in line (scripts/tinygo/runtime), and the guests'
# small helpers in hot loops say //go:inline (MEASUREMENTS.md, stop 45).
FLAGS=(-target=wasip1 -buildmode=c-shared -scheduler=none -gc=leaking -no-debug -opt=s)
# A module built with other flags, or with another version of the byte
# search or append put into TinyGo (install-tinygo.sh), is rebuilt, not only
# one older than its sources.
STAMP="TinyGo ${FLAGS[*]} bytealg $(sha256sum scripts/tinygo/bytealg/indexbyte.go | cut -c1-12) append $(sha256sum scripts/tinygo/runtime/append.go | cut -c1-12)"

# name_module appends the custom section that says which function a module
# is (wasm-host/canary/name.go: "gateway.function", then the name), unless
# the module has it already. Releases refuse a module of another function.
name_module() { # name out
  local name=$1 out=$2 size
  if grep -q -a -F 'gateway.function' "$out"; then return; fi
  size=$((1 + 16 + ${#name})) # the section name's length byte, its 16 bytes, the payload
  if [ "$size" -ge 128 ]; then echo "function name too long: $name" >&2; exit 1; fi
  printf "\\x00\\x$(printf %02x "$size")\\x10gateway.function%s" "$name" >>"$out"
}
export -f name_module

build() { # name src out [declared: the function the module says it is; name by default]
  local name=$1 src=$2 out=$3 declared=${4:-$1}
  if [ -f "$out" ] && [ "$(cat "$out.flags" 2>/dev/null)" = "$STAMP" ] && [ -z "$(find shared "$src" "$(dirname "$src")" go.mod go.sum -newer "$out" -name '*.go' -o -newer "$out" -name 'go.*' 2>/dev/null | head -n 1)" ]; then
    name_module "$declared" "$out"
    printf '  %-24s %8d bytes (up to date)\n' "$name" "$(stat -c %s "$out")"
    return
  fi
  # LLVM 19 does not know two features TinyGo asks for; the warning is noise.
  "$TINYGO" build "${FLAGS[@]}" -o "$out.tmp" "./$src" 2> >(grep -v 'is not a recognized feature' >&2)
  name_module "$declared" "$out.tmp"
  mv "$out.tmp" "$out"
  printf '%s\n' "$STAMP" >"$out.flags"
  printf '  %-24s %8d bytes\n' "$name" "$(stat -c %s "$out")"
}

mkdir -p build/functions build/testguests
echo "function modules (TinyGo $("$TINYGO" version | awk '{print $3}')):"
for dir in functions/*/wasm; do
  name=$(basename "$(dirname "$dir")")
  build "$name" "$dir" "build/functions/$name.wasm"
done
echo "test guests:"
# A test guest that stands in for a function in release tests names it in
# its FUNCTION file (canaryv1 and canaryv2 are releases of config).
for dir in wasm-host/testdata/guests/*/; do
  name=$(basename "$dir")
  build "$name" "${dir%/}" "build/testguests/$name.wasm" "$(cat "${dir}FUNCTION" 2>/dev/null || echo "$name")"
done

# The socket build (schema/socket.md): the same function packages with Go's
# own wasip1 port, the platform implemented inside the module (tag socket).
# TinyGo cannot compile it: its net package has no sockets on wasip1.
build_socket() { # name src out
  local name=$1 src=$2 out=$3
  if [ -f "$out" ] && [ -z "$(find shared wasm-host/ledger wasm-host/egress wasm-host/hostconfig "$src" "$(dirname "$src")" go.mod go.sum -newer "$out" -name '*.go' -o -newer "$out" -name 'go.*' 2>/dev/null | head -n 1)" ]; then
    name_module "$name" "$out"
    printf '  %-24s %8d bytes (up to date)\n' "$name" "$(stat -c %s "$out")"
    return
  fi
  GOOS=wasip1 GOARCH=wasm go build -tags socket,getaddrinfo -buildmode=c-shared -trimpath -ldflags=-s -o "$out.tmp" "./$src"
  name_module "$name" "$out.tmp"
  mv "$out.tmp" "$out"
  printf '  %-24s %8d bytes\n' "$name" "$(stat -c %s "$out")"
}
export -f build_socket
mkdir -p build/functions-socket
echo "socket build ($(go version | awk '{print $3}'), GOOS=wasip1 -tags socket,getaddrinfo):"
for dir in functions/*/wasm; do
  name=$(basename "$(dirname "$dir")")
  printf '%s %s %s\n' "$name" "$dir" "build/functions-socket/$name.wasm"
done | xargs -P 2 -L 1 bash -c 'build_socket "$@"' _
mkdir -p build/testguests-socket
build_socket testguest wasm-host/testdata/guests/testguest build/testguests-socket/testguest.wasm
