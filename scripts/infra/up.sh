#!/usr/bin/env bash
# Start the real test infrastructure: Apache Kafka (KRaft, from Maven Central jars)
# and Debian's redis-server, both on 127.0.0.1. Idempotent: already running → reused.
#
#   eval "$(scripts/infra/up.sh)"     # exports nothing by itself; eval to get the vars
#   scripts/infra/up.sh >.env.test    # or capture the KEY=VALUE lines
#   scripts/infra/up.sh --scaled      # three Kafka brokers + a Redis Cluster (3 masters,
#                                     # 3 replicas) instead: kafka-cluster.sh, redis-cluster.sh
#
# stdout: KAFKA_BROKERS=... and REDIS_URL=... (--scaled: KAFKA_BROKERS=h:p,h:p,h:p and
# REDIS_CLUSTER_NODES=...); progress on stderr.
# Honours KAFKA_PORT, KAFKA_CONTROLLER_PORT, KAFKA_DATA_DIR, KAFKA_VERSION, HOWK_CACHE_DIR, REDIS_PORT;
# --scaled: KAFKA_CLUSTER_PORT (19600), REDIS_CLUSTER_PORT (17000).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if [[ "${1:-}" == "--scaled" ]]; then
  "$here/kafka.sh" fetch
  "$here/redis.sh" ensure
  "$here/redis-cluster.sh" start
  "$here/kafka-cluster.sh" start
  exit 0
fi

"$here/kafka.sh" fetch
"$here/redis.sh" ensure
"$here/redis.sh" start
"$here/kafka.sh" start
