# Defaults equal the config schema's (kafka.topics.*, kafka.partitions, kafka.retention), and
# for replication what kafka.replication_factor / kafka.min_insync_replicas `auto` give on a
# cluster of three or more brokers (3 and 2); a unit test keeps them so.

variable "topic_names" {
  description = "Topic names (kafka.topics.*)"
  type = object({
    pending        = string
    slow           = string
    results        = string
    deadletter     = string
    state          = string
    scripts        = string
    keys           = string
    config_secrets = string
    guards         = string
    applications   = string
    messages       = string
  })
  default = {
    pending        = "howk.pending"
    slow           = "howk.slow"
    results        = "howk.results"
    deadletter     = "howk.deadletter"
    state          = "howk.state"
    scripts        = "howk.scripts"
    keys           = "howk.keys"
    config_secrets = "howk.config-secrets"
    guards         = "howk.guards"
    applications   = "howk.applications"
    messages       = "howk.messages"
  }
}

variable "partitions" {
  description = "Partitions of the partitioned topics (kafka.partitions): at least the most workers you will run; can only grow"
  type        = number
  default     = 12
}

variable "replication_factor" {
  description = "Replication factor of every topic (kafka.replication_factor): 3 survives the loss of a broker; a one-broker trial cluster needs 1"
  type        = number
  default     = 3
}

variable "retention_ms" {
  description = "Retention of the non-compacted topics in ms (kafka.retention: 168h)"
  type        = number
  default     = 604800000
}

variable "min_insync_replicas" {
  description = "min.insync.replicas of every topic (kafka.min_insync_replicas; null: the broker's default): with acks=all, 2 of 3 keeps every acknowledged write on two brokers; at most replication_factor"
  type        = number
  default     = 2

  validation {
    condition     = var.min_insync_replicas == null || var.min_insync_replicas >= 1
    error_message = "min_insync_replicas is at least 1 (or null)."
  }
}
