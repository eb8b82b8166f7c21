#!/usr/bin/env bash
# Stop what up.sh started (Kafka broker + redis). Safe to run when nothing runs.
# Pass --keep-data to keep Kafka's data dir (topics survive the next up.sh).
# The jar cache ($HOWK_CACHE_DIR, default ~/.cache/howk) is never touched.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

rc=0
"$here/kafka.sh" stop "$@" || rc=$?
"$here/redis.sh" stop || rc=$?
exit $rc
