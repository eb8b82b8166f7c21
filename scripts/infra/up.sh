#!/usr/bin/env bash
# Start the real test infrastructure: Apache Kafka (KRaft, from Maven Central jars)
# and Debian's redis-server, both on 127.0.0.1. Idempotent: already running → reused.
#
#   eval "$(scripts/infra/up.sh)"     # exports nothing by itself; eval to get the vars
#   scripts/infra/up.sh >.env.test    # or capture the KEY=VALUE lines
#
# stdout: KAFKA_BROKERS=... and REDIS_URL=... ; progress on stderr.
# Honours KAFKA_PORT, KAFKA_CONTROLLER_PORT, KAFKA_DATA_DIR, KAFKA_VERSION, HOWK_CACHE_DIR, REDIS_PORT.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

"$here/kafka.sh" fetch
"$here/redis.sh" ensure
"$here/redis.sh" start
"$here/kafka.sh" start
