variable "account_id" {
  description = "Cloudflare account that owns the Worker"
  type        = string
}

variable "zone_id" {
  description = "Zone of the hostname and route the edge serves"
  type        = string
}

variable "hostname" {
  description = "Hostname of the edge, e.g. hooks.example.com (a proxied DNS record is created for it)"
  type        = string
}

variable "route_pattern" {
  description = "Route of the edge, e.g. hooks.example.com/*"
  type        = string
}

variable "script_name" {
  description = "Name of the Worker (wrangler.toml [env.production] name)"
  type        = string
  default     = "howk-edge"
}

variable "worker_id" {
  description = "Id of the Worker that wrangler deploy created; the API also takes its name (the default: script_name)"
  type        = string
  default     = null
}

variable "wrangler_toml" {
  description = "wrangler.toml, read for its [[migrations]] tags (default: the repository's)"
  type        = string
  default     = null
}

variable "deployed_migration_tag" {
  description = "Last migration tag deployed by scripts/edge-deploy.sh (it prints it); a version is only uploaded when it equals wrangler.toml's last tag"
  type        = string
  default     = ""
}

variable "deploy_version" {
  description = "Upload and deploy the bundle as a Worker version (after the first wrangler deploy)"
  type        = bool
  default     = false
}

variable "bundle_dir" {
  description = "Output of `npm run edge:build`: worker.js and its .wasm modules (default: the repository's .tmp/edge-build)"
  type        = string
  default     = null
}

variable "compatibility_date" {
  description = "Keep equal to wrangler.toml"
  type        = string
  default     = "2026-04-26"
}

variable "vars" {
  description = "Plain HOWK_* settings of the edge (docs/EDGE.md): admission, batching, log level"
  type        = map(string)
  default = {
    HOWK_EDGE_KAFKA_REST_USERNAME = "howk"
    HOWK_EDGE_ADMISSION_RATE      = "100"
    HOWK_EDGE_ADMISSION_BURST     = "200"
    HOWK_EDGE_BATCH_MAX_RECORDS   = "500"
    HOWK_EDGE_BATCH_LINGER        = "5ms"
    HOWK_EDGE_PRODUCE_DEADLINE    = "1500ms"
    HOWK_LOG_LEVEL                = "info"
  }
}

variable "kafka_rest_url" {
  description = "howk-bridge's Kafka dialect, e.g. https://bridge.example.com/kafka"
  type        = string
}

variable "redis_rest_url" {
  description = "howk-bridge's Redis dialect, e.g. https://bridge.example.com/redis"
  type        = string
}

variable "secrets" {
  description = "Worker secrets, bound to each version Terraform uploads: HOWK_EDGE_KAFKA_REST_PASSWORD, HOWK_EDGE_REDIS_REST_TOKEN, HOWK_SECRETS_KEY, HOWK_EDGE_API_KEYS, and the inbound secrets the transformers name"
  type        = map(string)
  sensitive   = true
  default     = {}
}
