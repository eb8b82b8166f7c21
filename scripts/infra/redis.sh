#!/usr/bin/env bash
# Run a REAL redis-server (Debian's package) on loopback for Howk tests.
#
#   scripts/infra/redis.sh ensure   # apt-get install redis-server if missing (never starts the system service)
#   scripts/infra/redis.sh start    # start (or reuse) on 127.0.0.1:$REDIS_PORT, wait for PONG
#   scripts/infra/redis.sh stop     # SHUTDOWN NOSAVE (then SIGTERM/SIGKILL), remove /tmp/howk-redis-$REDIS_PORT
#   scripts/infra/redis.sh kill9    # SIGKILL (chaos tests)
#   scripts/infra/redis.sh status   # exit 0 if it answers PING
#
# Environment: REDIS_PORT (default 16379).
# stdout carries only KEY=VALUE lines (eval-able); all progress goes to stderr.
set -euo pipefail

REDIS_PORT="${REDIS_PORT:-16379}"
RUN_DIR="/tmp/howk-redis-$REDIS_PORT"
PID_FILE="$RUN_DIR/redis.pid"
LOG_FILE="$RUN_DIR/redis.log"

log() { echo "[redis.sh] $*" >&2; }
die() { echo "[redis.sh] ERROR: $*" >&2; exit 1; }

# shellcheck source=proc.sh
source "$(dirname "${BASH_SOURCE[0]}")/proc.sh"

print_env() { echo "REDIS_URL=redis://127.0.0.1:$REDIS_PORT"; }

ping_ok() { [[ "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null || true)" == "PONG" ]]; }

pid_alive() {
  [[ -f "$PID_FILE" ]] || return 1
  local pid; pid="$(cat "$PID_FILE")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [[ -r "/proc/$pid/cmdline" ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "redis-server" || return 1
  echo "$pid"
}

cmd_ensure() {
  if command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; then
    log "$(redis-server --version | cut -d' ' -f1-3) present"
    return 0
  fi
  [[ $(id -u) == 0 ]] || die "redis-server missing and not root: install it (apt-get install redis-server)"
  log "installing Debian redis-server via apt-get (system service will NOT be started)"
  # Keep the package's postinst from starting the system service: a policy-rc.d
  # that denies all actions (only if none exists; removed again afterwards).
  local made_policy=0
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    made_policy=1
  fi
  local rc=0
  {
    DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server
  } >&2 || rc=$?
  [[ $made_policy == 1 ]] && rm -f /usr/sbin/policy-rc.d
  [[ $rc == 0 ]] || die "apt-get install redis-server failed (rc=$rc)"
  log "$(redis-server --version | cut -d' ' -f1-3) installed"
}

cmd_start() {
  command -v redis-server >/dev/null 2>&1 || cmd_ensure
  local pid
  if ping_ok; then
    if pid="$(pid_alive)"; then
      log "redis already running (pid $pid, port $REDIS_PORT) — reusing"
    else
      log "something already answers PING on 127.0.0.1:$REDIS_PORT — reusing it"
    fi
    print_env
    return 0
  fi
  if pid="$(pid_alive)"; then
    die "redis pid $pid alive but not answering on $REDIS_PORT (see $LOG_FILE); run 'redis.sh stop'"
  fi
  (exec 3<>"/dev/tcp/127.0.0.1/$REDIS_PORT") 2>/dev/null && die "port $REDIS_PORT in use by a non-redis process"
  mkdir -p "$RUN_DIR"
  rm -f "$PID_FILE"
  # No config file: everything on the command line; loopback only, no persistence.
  redis-server \
    --port "$REDIS_PORT" --bind 127.0.0.1 --protected-mode yes \
    --save "" --appendonly no --databases 64 \
    --daemonize yes --pidfile "$PID_FILE" --logfile "$LOG_FILE" --dir "$RUN_DIR" \
    --loglevel notice >&2 || die "redis-server failed to start (see $LOG_FILE)"
  local i
  for ((i = 0; i < 100; i++)); do
    ping_ok && break
    sleep 0.1
  done
  if ! ping_ok; then
    tail -n 20 "$LOG_FILE" >&2 || true
    die "redis did not answer PING within 10 s"
  fi
  log "redis $(redis-cli -p "$REDIS_PORT" info server | awk -F: '/^redis_version/{print $2}' | tr -d '\r') ready on 127.0.0.1:$REDIS_PORT (pid $(cat "$PID_FILE"))"
  print_env
}

wait_gone() {
  local pid="$1" i
  for ((i = 0; i < "$2"; i++)); do
    alive "$pid" || return 0
    sleep 0.1
  done
  return 1
}

cmd_stop() {
  local pid=""
  pid="$(pid_alive)" || pid=""
  if [[ -n "$pid" ]]; then
    redis-cli -h 127.0.0.1 -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
    if ! wait_gone "$pid" 50; then
      kill -TERM "$pid" 2>/dev/null || true
      wait_gone "$pid" 50 || kill -KILL "$pid" 2>/dev/null || true
    fi
    log "stopped redis pid $pid (port $REDIS_PORT)"
  elif ping_ok; then
    log "a redis on port $REDIS_PORT was not started by this script (no pidfile) — leaving it alone"
  else
    log "no redis running on port $REDIS_PORT"
  fi
  rm -rf "$RUN_DIR"
}

cmd_kill9() {
  local pid
  if pid="$(pid_alive)"; then
    kill -KILL "$pid" 2>/dev/null || true
    wait_gone "$pid" 50 || true
    log "SIGKILL redis pid $pid"
  else
    log "no redis (started by this script) on port $REDIS_PORT"
  fi
}

cmd_status() {
  if ping_ok; then
    log "running on 127.0.0.1:$REDIS_PORT"
    print_env
    return 0
  fi
  log "not running (port $REDIS_PORT)"
  return 1
}

sub="${1:-}"
[[ $# -gt 0 ]] && shift
case "$sub" in
  ensure) cmd_ensure ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  kill9) cmd_kill9 ;;
  status) cmd_status ;;
  *) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
