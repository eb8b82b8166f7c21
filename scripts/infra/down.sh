#!/usr/bin/env bash
# Stop what up.sh started (Kafka broker + redis). Safe to run when nothing runs.
# Pass --keep-data to keep Kafka's data dir (topics survive the next up.sh).
# Pass --scaled to stop what `up.sh --scaled` started (the three brokers, the Redis Cluster).
# The jar cache ($HOWK_CACHE_DIR, default ~/.cache/howk) is never touched.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

scaled=0
args=()
for a in "$@"; do
  if [[ "$a" == "--scaled" ]]; then scaled=1; else args+=("$a"); fi
done

rc=0
if [[ $scaled == 1 ]]; then
  "$here/kafka-cluster.sh" stop "${args[@]}" || rc=$?
  "$here/redis-cluster.sh" stop || rc=$?
  exit $rc
fi
"$here/kafka.sh" stop "${args[@]}" || rc=$?
"$here/redis.sh" stop || rc=$?
exit $rc
