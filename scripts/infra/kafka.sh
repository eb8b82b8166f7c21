#!/usr/bin/env bash
# Run a REAL single-node Apache Kafka broker (KRaft, combined broker+controller)
# straight from the Apache jars on Maven Central. No Docker needed.
#
#   scripts/infra/kafka.sh fetch              # resolve jars into the cache (once)
#   scripts/infra/kafka.sh start [--fresh]    # start (or reuse) the broker, wait until ready
#   scripts/infra/kafka.sh stop [--keep-data] # SIGTERM, SIGKILL after 10 s
#   scripts/infra/kafka.sh kill9              # SIGKILL (chaos tests)
#   scripts/infra/kafka.sh status             # exit 0 if running
#   scripts/infra/kafka.sh tool <MainClass> [args...]   # run a class from the libs
#       e.g. tool org.apache.kafka.tools.TopicCommand --bootstrap-server 127.0.0.1:19092 --list
#
# Environment:
#   KAFKA_VERSION          default 4.1.2
#   HOWK_CACHE_DIR         default $HOME/.cache/howk  (jars: $HOWK_CACHE_DIR/kafka-$KAFKA_VERSION/libs)
#   HOWK_M2_REPO           optional Maven local repo (default: Maven's own, ~/.m2/repository)
#   KAFKA_PORT             default 19092 (PLAINTEXT, 127.0.0.1 only)
#   KAFKA_CONTROLLER_PORT  default 19093 (CONTROLLER, 127.0.0.1 only)
#   KAFKA_DATA_DIR         default /tmp/howk-kafka-$KAFKA_PORT
#   KAFKA_HEAP_OPTS        default "-Xmx512m -Xms256m"
#   KAFKA_JVM_OPTS         default "-XX:+UseSerialGC -XX:MaxMetaspaceSize=256m -Djava.awt.headless=true"
#   KAFKA_START_TIMEOUT    default 90 (seconds)
#
# stdout carries only KEY=VALUE lines (eval-able); all progress goes to stderr.
set -euo pipefail

KAFKA_VERSION="${KAFKA_VERSION:-4.1.2}"
SCALA_BINARY="2.13"
# Kafka 4.1 logs through slf4j-api 1.7.x; the broker distribution binds it to log4j2.
LOG4J_VERSION="${HOWK_LOG4J_VERSION:-2.24.3}"
DEP_PLUGIN="org.apache.maven.plugins:maven-dependency-plugin:3.8.1"

CACHE_ROOT="${HOWK_CACHE_DIR:-$HOME/.cache/howk}"
KAFKA_HOME="$CACHE_ROOT/kafka-$KAFKA_VERSION"
LIBS_DIR="$KAFKA_HOME/libs"
MARKER="$KAFKA_HOME/.libs-complete"

KAFKA_PORT="${KAFKA_PORT:-19092}"
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-19093}"
DEFAULT_DATA_DIR="/tmp/howk-kafka-$KAFKA_PORT"
# Pointer file: lets stop/kill9/status find a broker by port even when it was
# started with a custom KAFKA_DATA_DIR.
POINTER_FILE="/tmp/howk-kafka-$KAFKA_PORT.datadir"
if [[ -n "${KAFKA_DATA_DIR:-}" ]]; then
  DATA_DIR="$KAFKA_DATA_DIR"
elif [[ -f "$POINTER_FILE" ]]; then
  DATA_DIR="$(cat "$POINTER_FILE")"
else
  DATA_DIR="$DEFAULT_DATA_DIR"
fi
KAFKA_HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xmx512m -Xms256m}"
KAFKA_JVM_OPTS="${KAFKA_JVM_OPTS:--XX:+UseSerialGC -XX:MaxMetaspaceSize=256m -Djava.awt.headless=true}"
KAFKA_START_TIMEOUT="${KAFKA_START_TIMEOUT:-90}"

log() { echo "[kafka.sh] $*" >&2; }
die() { echo "[kafka.sh] ERROR: $*" >&2; exit 1; }

need() { command -v "$1" >/dev/null 2>&1 || die "'$1' not found on PATH"; }

# shellcheck source=proc.sh
source "$(dirname "${BASH_SOURCE[0]}")/proc.sh"
# shellcheck source=kafka-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/kafka-common.sh"

# ---------------------------------------------------------------- fetch ----
write_pom() {
  cat >"$1" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0"
         xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 http://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.howk.infra</groupId>
  <artifactId>kafka-broker-libs</artifactId>
  <version>$KAFKA_VERSION</version>
  <packaging>pom</packaging>
  <dependencies>
    <!-- the broker (kafka.Kafka, kafka.tools.StorageTool) -->
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_$SCALA_BINARY</artifactId>
      <version>$KAFKA_VERSION</version>
    </dependency>
    <!-- CLI tools (TopicCommand, ConsoleProducer, ConsoleConsumer, ...) -->
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka-tools</artifactId>
      <version>$KAFKA_VERSION</version>
    </dependency>
    <!-- logging backend: slf4j 1.7 -> log4j2, to a file -->
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-core</artifactId>
      <version>$LOG4J_VERSION</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>$LOG4J_VERSION</version>
    </dependency>
  </dependencies>
</project>
EOF
}

cmd_fetch() {
  if [[ -f "$MARKER" ]]; then
    log "kafka $KAFKA_VERSION libs already cached in $LIBS_DIR"
    return 0
  fi
  need java
  need mvn
  mkdir -p "$KAFKA_HOME"
  # Serialise concurrent fetches (e.g. parallel test workers).
  exec 8>"$KAFKA_HOME/.fetch.lock"
  flock 8
  if [[ -f "$MARKER" ]]; then
    log "kafka $KAFKA_VERSION libs already cached (fetched concurrently)"
    return 0
  fi
  log "resolving org.apache.kafka:kafka_$SCALA_BINARY:$KAFKA_VERSION + runtime deps from Maven Central ..."
  local t0=$SECONDS pom="$KAFKA_HOME/pom.xml" tmp="$KAFKA_HOME/libs.tmp" mvnlog="$KAFKA_HOME/mvn-fetch.log"
  write_pom "$pom"
  rm -rf "$tmp"
  local repo_args=()
  [[ -n "${HOWK_M2_REPO:-}" ]] && repo_args=("-Dmaven.repo.local=$HOWK_M2_REPO")
  if ! mvn -B -f "$pom" "${repo_args[@]}" \
        "$DEP_PLUGIN:copy-dependencies" \
        -DincludeScope=runtime \
        -DoutputDirectory="$tmp" >"$mvnlog" 2>&1; then
    tail -n 40 "$mvnlog" >&2
    die "mvn could not resolve Kafka $KAFKA_VERSION (full log: $mvnlog)"
  fi
  # Sanity: the pieces we rely on must be there.
  local j
  for j in "kafka_$SCALA_BINARY-$KAFKA_VERSION.jar" "kafka-clients-$KAFKA_VERSION.jar" \
           "kafka-tools-$KAFKA_VERSION.jar" "log4j-core-$LOG4J_VERSION.jar" \
           "log4j-slf4j-impl-$LOG4J_VERSION.jar"; do
    [[ -f "$tmp/$j" ]] || die "resolution incomplete: $j missing in $tmp (see $mvnlog)"
  done
  # Exactly one slf4j binding, and it must match slf4j-api 1.7.x.
  # shellcheck disable=SC2010  # jar names are plain
  if ls "$tmp" | grep -qE '^(slf4j-api-2\.|log4j-slf4j2-impl|slf4j-reload4j|slf4j-simple|logback-classic)'; then
    die "unexpected slf4j setup in $tmp: $(ls "$tmp" | grep -E 'slf4j|logback' | tr '\n' ' ')"
  fi
  rm -rf "$LIBS_DIR"
  mv "$tmp" "$LIBS_DIR"
  (cd "$LIBS_DIR" && ls -1 -- *.jar) >"$MARKER"
  log "cached $(wc -l <"$MARKER") jars ($(du -sh "$LIBS_DIR" | cut -f1)) in $LIBS_DIR in $((SECONDS - t0)) s"
}

# --------------------------------------------------------------- helpers ---
java_cp() { echo "$LIBS_DIR/*"; }

read_pid() {
  local f="$DATA_DIR/kafka.pid"
  [[ -f "$f" ]] || return 1
  local pid
  pid="$(cat "$f")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  echo "$pid"
}

# Alive AND really our broker (guards against a recycled pid).
pid_is_broker() {
  local pid="$1"
  [[ -r "/proc/$pid/cmdline" ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "kafka.Kafka $DATA_DIR/server.properties"
}

running_pid() {
  local pid
  pid="$(read_pid)" || return 1
  pid_is_broker "$pid" || return 1
  echo "$pid"
}

write_configs() {
  mkdir -p "$DATA_DIR/kraft-logs"
  cat >"$DATA_DIR/server.properties" <<EOF
# generated by scripts/infra/kafka.sh — single-node KRaft broker for Howk tests
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT

log.dirs=$DATA_DIR/kraft-logs
num.partitions=8
default.replication.factor=1
min.insync.replicas=1
auto.create.topics.enable=true
delete.topic.enable=true

# internal topics: single replica, fewer partitions (faster first group join)
offsets.topic.replication.factor=1
offsets.topic.num.partitions=8
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=8
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
# a worker killed with -9 leaves its partitions after its session timeout: allow
# Howk's 3 s (kafka.session_timeout; Kafka's own minimum is 6 s)
group.min.session.timeout.ms=1000

# small segments / short retention, compaction on (tests)
log.segment.bytes=16777216
log.retention.hours=24
log.retention.bytes=1073741824
log.retention.check.interval.ms=60000
log.cleaner.enable=true
log.cleaner.backoff.ms=5000
log.cleaner.dedupe.buffer.size=8388608
log.cleaner.threads=1

# after a SIGKILL the restarted broker cannot re-register until the old
# registration's session expires (default 9 s): keep that short for chaos tests.
broker.heartbeat.interval.ms=1000
broker.session.timeout.ms=4000

# gentle on a 2-core machine
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
background.threads=4
EOF
  write_log4j2 "$DATA_DIR"
}

format_storage() {
  if [[ -f "$DATA_DIR/kraft-logs/meta.properties" ]]; then
    log "storage already formatted ($(grep '^cluster.id' "$DATA_DIR/kraft-logs/meta.properties"))"
    return 0
  fi
  local cid
  cid="$(random_cluster_id)"
  log "formatting storage in $DATA_DIR/kraft-logs (cluster.id=$cid)"
  # shellcheck disable=SC2086  # JVM opts are meant to split
  if ! java $KAFKA_JVM_OPTS -Xmx256m -XX:TieredStopAtLevel=1 \
        -Dlog4j2.configurationFile="$DATA_DIR/log4j2.properties" -Dkafka.logs.dir="$DATA_DIR" \
        -cp "$(java_cp)" kafka.tools.StorageTool format \
        -t "$cid" -c "$DATA_DIR/server.properties" >"$DATA_DIR/format.out" 2>&1; then
    cat "$DATA_DIR/format.out" >&2
    die "storage format failed"
  fi
}

print_env() { echo "KAFKA_BROKERS=127.0.0.1:$KAFKA_PORT"; }

# ----------------------------------------------------------------- start ---
cmd_start() {
  local fresh=0
  for a in "$@"; do
    case "$a" in
      --fresh) fresh=1 ;;
      *) die "start: unknown option $a" ;;
    esac
  done
  need java
  [[ -f "$MARKER" ]] || cmd_fetch

  local pid
  if pid="$(running_pid)"; then
    if port_open "$KAFKA_PORT"; then
      log "broker already running (pid $pid, data $DATA_DIR) — reusing"
      print_env
      return 0
    fi
    die "broker pid $pid is alive but port $KAFKA_PORT is closed; run 'kafka.sh stop' first (log: $DATA_DIR/server.log)"
  fi
  # A broker on another data dir may own this port (pointer file).
  if [[ -n "${KAFKA_DATA_DIR:-}" && -f "$POINTER_FILE" && "$(cat "$POINTER_FILE")" != "$DATA_DIR" ]]; then
    local other; other="$(cat "$POINTER_FILE")"
    if [[ -f "$other/kafka.pid" ]] && KAFKA_DATA_DIR="$other" "$0" status >/dev/null 2>&1; then
      die "port $KAFKA_PORT is used by a broker with data dir $other; stop it first"
    fi
  fi
  port_open "$KAFKA_PORT" && die "port $KAFKA_PORT already in use by another process"
  port_open "$KAFKA_CONTROLLER_PORT" && die "controller port $KAFKA_CONTROLLER_PORT already in use by another process"

  if [[ $fresh == 1 && -d "$DATA_DIR" ]]; then
    log "--fresh: wiping $DATA_DIR"
    rm -rf "$DATA_DIR"
  fi
  mkdir -p "$DATA_DIR"
  [[ "$DATA_DIR" == "$DEFAULT_DATA_DIR" ]] && touch "$DATA_DIR/.howk-default-dir"
  echo "$DATA_DIR" >"$POINTER_FILE"

  write_configs
  format_storage

  local logf="$DATA_DIR/server.log" outf="$DATA_DIR/kafka.out"
  touch "$logf"
  local log_offset; log_offset="$(stat -c %s "$logf")"
  local t0; t0="$(date +%s.%N)"
  log "starting kafka $KAFKA_VERSION on 127.0.0.1:$KAFKA_PORT (controller $KAFKA_CONTROLLER_PORT, data $DATA_DIR)"
  # setsid: own session, so Ctrl-C / a test runner's process-group kill does not
  # take the broker down; it execs (no fork) so $! is the JVM's pid.
  # shellcheck disable=SC2086
  setsid java $KAFKA_HEAP_OPTS $KAFKA_JVM_OPTS \
    -Dlog4j2.configurationFile="$DATA_DIR/log4j2.properties" \
    -Dkafka.logs.dir="$DATA_DIR" \
    -cp "$(java_cp)" kafka.Kafka "$DATA_DIR/server.properties" \
    </dev/null >>"$outf" 2>&1 &
  pid=$!
  echo "$pid" >"$DATA_DIR/kafka.pid"

  # Ready = process alive + PLAINTEXT port accepts + this run logged "Kafka Server started".
  local deadline=$((SECONDS + KAFKA_START_TIMEOUT))
  while :; do
    if ! alive "$pid"; then
      log "broker process exited during startup. tail of $logf:"
      tail -c +"$((log_offset + 1))" "$logf" | tail -n 40 >&2 || true
      log "tail of $outf:"; tail -n 20 "$outf" >&2 || true
      rm -f "$DATA_DIR/kafka.pid"
      die "kafka failed to start"
    fi
    if port_open "$KAFKA_PORT" &&
       tail -c +"$((log_offset + 1))" "$logf" | grep -q -E 'Kafka Server started|\[KafkaRaftServer nodeId=[0-9]+\] Kafka Server started'; then
      break
    fi
    if (( SECONDS >= deadline )); then
      log "timeout after ${KAFKA_START_TIMEOUT}s waiting for the broker. tail of $logf:"
      tail -c +"$((log_offset + 1))" "$logf" | tail -n 40 >&2 || true
      log "tail of $outf:"; tail -n 20 "$outf" >&2 || true
      kill -9 "$pid" 2>/dev/null || true
      rm -f "$DATA_DIR/kafka.pid"
      die "kafka did not become ready within ${KAFKA_START_TIMEOUT}s"
    fi
    sleep 0.2
  done
  local t1; t1="$(date +%s.%N)"
  log "ready in $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}') s (pid $pid, rss $(awk '/VmRSS/{printf "%d MiB", $2/1024}' "/proc/$pid/status"))"
  print_env
}

# ------------------------------------------------------------------ stop ---
cmd_stop() {
  local keep=0
  for a in "$@"; do
    case "$a" in
      --keep-data) keep=1 ;;
      *) die "stop: unknown option $a" ;;
    esac
  done
  local pid
  if pid="$(running_pid)"; then
    log "stopping broker pid $pid (SIGTERM)"
    kill -TERM "$pid" 2>/dev/null || true
    local i
    for ((i = 0; i < 100; i++)); do
      alive "$pid" || break
      sleep 0.1
    done
    if alive "$pid"; then
      log "still alive after 10 s — SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      for ((i = 0; i < 50; i++)); do alive "$pid" || break; sleep 0.1; done
    fi
  else
    log "no broker running for port $KAFKA_PORT (data $DATA_DIR)"
  fi
  rm -f "$DATA_DIR/kafka.pid"
  if [[ $keep == 0 && "$DATA_DIR" == "$DEFAULT_DATA_DIR" && -f "$DATA_DIR/.howk-default-dir" ]]; then
    log "removing default data dir $DATA_DIR"
    rm -rf "$DATA_DIR"
    rm -f "$POINTER_FILE"
  elif [[ $keep == 0 ]]; then
    log "keeping custom data dir $DATA_DIR"
    rm -f "$POINTER_FILE"
  else
    log "kept data dir $DATA_DIR (restart with the same KAFKA_DATA_DIR/KAFKA_PORT)"
  fi
}

cmd_kill9() {
  local pid
  if pid="$(running_pid)"; then
    log "SIGKILL broker pid $pid"
    kill -KILL "$pid" 2>/dev/null || true
    local i
    for ((i = 0; i < 50; i++)); do alive "$pid" || break; sleep 0.1; done
  else
    log "no broker running for port $KAFKA_PORT"
  fi
  rm -f "$DATA_DIR/kafka.pid"
}

cmd_status() {
  local pid
  if pid="$(running_pid)" && port_open "$KAFKA_PORT"; then
    log "running: pid $pid, 127.0.0.1:$KAFKA_PORT, data $DATA_DIR, rss $(awk '/VmRSS/{printf "%d MiB", $2/1024}' "/proc/$pid/status")"
    print_env
    return 0
  fi
  log "not running (port $KAFKA_PORT, data $DATA_DIR)"
  return 1
}

# Run any main class from the cached libs (admin/console tools), quiet logging.
cmd_tool() {
  [[ $# -ge 1 ]] || die "usage: kafka.sh tool <MainClass> [args...]"
  [[ -f "$MARKER" ]] || cmd_fetch
  local cls="$1"; shift
  # shellcheck disable=SC2086
  exec java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    -cp "$(java_cp)" "$cls" "$@"
}

usage() {
  sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

sub="${1:-}"
[[ $# -gt 0 ]] && shift
case "$sub" in
  fetch) cmd_fetch "$@" ;;
  start) cmd_start "$@" ;;
  stop) cmd_stop "$@" ;;
  kill9) cmd_kill9 "$@" ;;
  status) cmd_status "$@" ;;
  tool) cmd_tool "$@" ;;
  *) usage ;;
esac
