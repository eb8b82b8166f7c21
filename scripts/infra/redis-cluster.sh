#!/usr/bin/env bash
# Run a REAL Redis Cluster (3 masters + 3 replicas, Debian's redis-server) on loopback.
# Howk runs on it with HOWK_REDIS_CLUSTER_NODES; it is part of the scaled set-up (up.sh --scaled)
# and the replicated tests start one of their own (test/replicated/redis-cluster.ts).
#
#   scripts/infra/redis-cluster.sh start   # start the six nodes, create the cluster once
#   scripts/infra/redis-cluster.sh stop    # SHUTDOWN NOSAVE each node, remove the run dir
#   scripts/infra/redis-cluster.sh status  # exit 0 if the cluster state is ok
#   scripts/infra/redis-cluster.sh kill9 <port>  # SIGKILL one node (`start` brings it back
#                                                # empty; it rejoins from its nodes.conf)
#
# Environment: REDIS_CLUSTER_PORT (default 17000: nodes on 17000-17005, cluster bus +10000).
# stdout carries only REDIS_CLUSTER_NODES=h:p,...; progress goes to stderr.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

BASE="${REDIS_CLUSTER_PORT:-17000}"
DIR="/tmp/howk-redis-cluster-$BASE"
PORTS=("$BASE" $((BASE + 1)) $((BASE + 2)) $((BASE + 3)) $((BASE + 4)) $((BASE + 5)))

log() { echo "[redis-cluster.sh] $*" >&2; }
die() { echo "[redis-cluster.sh] ERROR: $*" >&2; exit 1; }

nodes() {
  local p out=""
  for p in "${PORTS[@]}"; do out+="${out:+ }127.0.0.1:$p"; done
  echo "$out"
}
print_env() { echo "REDIS_CLUSTER_NODES=$(nodes | tr ' ' ',')"; }
ping_ok() { [[ "$(redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null || true)" == "PONG" ]]; }
cluster_ok() { redis-cli -h 127.0.0.1 -p "$BASE" cluster info 2>/dev/null | grep -q '^cluster_state:ok'; }
# A node that knows no other has never been in a cluster; one restarted after kill9 knows them
# all from its nodes.conf and must not be created into a new one.
never_joined() { redis-cli -h 127.0.0.1 -p "$BASE" cluster info 2>/dev/null | grep -q '^cluster_known_nodes:1\b'; }

cmd_start() {
  command -v redis-server >/dev/null 2>&1 || "$here/redis.sh" ensure
  local p i
  mkdir -p "$DIR"
  for p in "${PORTS[@]}"; do
    if ping_ok "$p"; then
      log "node $p already answers — reusing"
      continue
    fi
    mkdir -p "$DIR/$p"
    redis-server --port "$p" --bind 127.0.0.1 --protected-mode yes --cluster-enabled yes \
      --cluster-config-file "$DIR/$p/nodes.conf" --cluster-node-timeout 3000 \
      --save "" --appendonly no --daemonize yes --pidfile "$DIR/$p/redis.pid" \
      --logfile "$DIR/$p/redis.log" --dir "$DIR/$p" >&2 || die "redis-server on $p failed to start"
  done
  for p in "${PORTS[@]}"; do
    for ((i = 0; i < 300; i++)); do ping_ok "$p" && break; sleep 0.1; done
    ping_ok "$p" || die "node $p did not answer PING within 30 s (see $DIR/$p/redis.log)"
  done
  if never_joined; then
    # shellcheck disable=SC2046
    redis-cli --cluster create $(nodes) --cluster-replicas 1 --cluster-yes >"$DIR/create.out" 2>&1 ||
      { cat "$DIR/create.out" >&2; die "redis-cli --cluster create failed"; }
  fi
  for ((i = 0; i < 200; i++)); do cluster_ok && break; sleep 0.1; done
  cluster_ok || die "cluster state not ok within 20 s"
  log "redis cluster ready: 3 masters + 3 replicas on $(nodes)"
  print_env
}

cmd_stop() {
  local p pid i
  for p in "${PORTS[@]}"; do
    pid="$(cat "$DIR/$p/redis.pid" 2>/dev/null || true)"
    [[ "$pid" =~ ^[0-9]+$ ]] || continue
    redis-cli -h 127.0.0.1 -p "$p" shutdown nosave >/dev/null 2>&1 || true
    for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
  done
  rm -rf "$DIR"
  log "stopped (ports ${PORTS[0]}-${PORTS[5]})"
}

cmd_kill9() {
  local p="${1:-}" pid i
  [[ " ${PORTS[*]} " == *" $p "* ]] || die "kill9: give one of the ports ${PORTS[*]}"
  pid="$(cat "$DIR/$p/redis.pid" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || { log "node $p is not running"; return 0; }
  kill -KILL "$pid"
  for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  rm -f "$DIR/$p/redis.pid"
  log "SIGKILL node $p (pid $pid)"
}

cmd_status() {
  if cluster_ok; then
    log "cluster state ok"
    print_env
    return 0
  fi
  log "not running or not ok (port $BASE)"
  return 1
}

sub="${1:-}"
[[ $# -gt 0 ]] && shift
case "$sub" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  kill9) cmd_kill9 "$@" ;;
  *) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
