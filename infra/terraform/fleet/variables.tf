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
