# Sourced by kafka.sh and redis.sh: process helpers both use.

# Alive and not a zombie (a zombie still passes `kill -0`).
alive() {
  kill -0 "$1" 2>/dev/null || return 1
  local st
  st="$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null || true)"
  [[ -n "$st" && "$st" != Z && "$st" != X ]]
}
