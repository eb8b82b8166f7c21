# Sourced by kafka.sh and kafka-cluster.sh: what a single broker and a cluster's nodes share.

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# The broker's log4j2 file in folder $1: its server.log there, chatty loggers at WARN.
write_log4j2() {
  cat >"$1/log4j2.properties" <<'EOF'
status = warn
name = howk-kafka
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = ${sys:kafka.logs.dir}/server.log
appender.file.append = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRefs = file
rootLogger.appenderRef.file.ref = FILE
logger.clients.name = org.apache.kafka.clients
logger.clients.level = WARN
logger.statechange.name = state.change.logger
logger.statechange.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.cleaner.name = kafka.log.LogCleaner
logger.cleaner.level = WARN
EOF
}

random_cluster_id() {
  # Kafka Uuid: 16 random bytes, base64url without padding (22 chars).
  # Avoid a leading '-' (CLI parsing) like Uuid.randomUuid() does.
  local id
  while :; do
    id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
    [[ "$id" != -* ]] && { echo "$id"; return; }
  done
}
