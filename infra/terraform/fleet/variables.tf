variable "kafka_bootstrap_servers" {
  description = "Brokers Terraform reaches to manage the topics"
  type        = list(string)
}

variable "kafka_tls_enabled" {
  description = "TLS to the brokers"
  type        = bool
  default     = true
}

variable "brokers_in_cluster" {
  description = "HOWK_KAFKA_BROKERS as the pods reach them, comma-separated"
  type        = string
}

variable "partitions" {
  description = "kafka.partitions: partitions of the partitioned topics, and the most worker replicas that do work"
  type        = number
  default     = 12
}

variable "replication_factor" {
  description = "kafka.replication_factor"
  type        = number
  default     = 3
}

variable "min_insync_replicas" {
  description = "kafka.min_insync_replicas: replicas holding a write before it is acknowledged (acks=all); 2 of 3 survives one broker down"
  type        = number
  default     = 2
}

variable "redis_cluster_nodes" {
  description = "redis.cluster_nodes: seed nodes (host:port) of a Redis Cluster as the pods reach them; empty: one Redis through HOWK_REDIS_URL"
  type        = list(string)
  default     = []
}

variable "image" {
  description = "The Howk image"
  type        = string
}

variable "namespace" {
  description = "Kubernetes namespace of the fleet"
  type        = string
  default     = "howk"
}

variable "env" {
  description = "More HOWK_* settings for every binary"
  type        = map(string)
  default     = {}
}

variable "secret_env" {
  description = "Secret HOWK_* settings: HOWK_REDIS_URL, HOWK_SECRETS_KEY, HOWK_BRIDGE_KAFKA_PASSWORD, HOWK_BRIDGE_REDIS_TOKEN"
  type        = map(string)
  sensitive   = true
}
