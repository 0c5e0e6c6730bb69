# Shared helpers for the installers. Sourced, not executed.
# Toolchains live outside the repository so a second `make test` reuses them.
DG_CACHE="${DG_CACHE:-$HOME/.cache/decision-gateway}"
mkdir -p "$DG_CACHE"

log() { printf '[%s] %s\n' "$(basename "$0" .sh)" "$*" >&2; }

# apt_install installs the Debian packages that are missing, running
# `apt-get update` at most once per machine day.
apt_install() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "apt-get install ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  local stamp="$DG_CACHE/.apt-updated"
  if [ ! -f "$stamp" ] || [ -n "$(find "$stamp" -mmin +1440 2>/dev/null)" ]; then
    $sudo apt-get update -qq >&2 && touch "$stamp"
  fi
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}
