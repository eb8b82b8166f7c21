variable "namespace" {
  description = "Namespace the fleet runs in (created elsewhere)"
  type        = string
  default     = "howk"
}

variable "image" {
  description = "The Howk image (Dockerfile at the repository root), e.g. registry.example.com/howk:1.2.3"
  type        = string
}

variable "env" {
  description = "HOWK_* settings shared by every binary (ConfigMap), e.g. HOWK_KAFKA_BROKERS, HOWK_DELIVERY_ALLOWED_NETWORKS"
  type        = map(string)
  default     = {}
}

variable "secret_env" {
  description = "Secret HOWK_* settings (Secret), e.g. HOWK_REDIS_URL with a password, HOWK_SECRETS_KEY, HOWK_BRIDGE_KAFKA_PASSWORD, HOWK_BRIDGE_REDIS_TOKEN"
  type        = map(string)
  sensitive   = true
  default     = {}
}

variable "redis_cluster_nodes" {
  description = "Seed nodes (host:port) of a Redis Cluster, given to every binary as HOWK_REDIS_CLUSTER_NODES (redis.cluster_nodes); empty: one Redis instance through HOWK_REDIS_URL"
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for n in var.redis_cluster_nodes : can(regex("^[^,:\\s]+:[0-9]+$", n))])
    error_message = "Each Redis Cluster node is host:port."
  }
}

variable "replicas" {
  description = "Replicas per binary; howk-worker's is the HPA's minimum"
  type        = map(number)
  default = {
    api        = 2
    worker     = 2
    scheduler  = 2
    reconciler = 1
    bridge     = 2
  }
}

variable "worker_max_replicas" {
  description = "Most howk-worker replicas: more than kafka.partitions would stay idle"
  type        = number
  default     = 12
}

variable "lag_metric_name" {
  description = "External metric of the consumer group's lag (e.g. kafka_consumergroup_lag of a Kafka exporter, served by a metrics adapter)"
  type        = string
  default     = "kafka_consumergroup_lag"
}

variable "lag_metric_selector" {
  description = "Labels selecting howk-worker's group in the lag metric"
  type        = map(string)
  default = {
    consumergroup = "howk-workers"
  }
}

variable "lag_per_worker" {
  description = "Records of lag per worker replica the HPA aims at"
  type        = string
  default     = "5000"
}

variable "resources" {
  description = "Requests and limits of every container"
  type = object({
    requests = map(string)
    limits   = map(string)
  })
  default = {
    requests = { cpu = "250m", memory = "256Mi" }
    limits   = { memory = "1Gi" }
  }
}
