# Kafka topics and the Node fleet together: the topics exist with the configured partitions,
# retention and compaction before any binary starts (docs/OPERATIONS.md, "Deploying with
# Terraform"). The edge on Cloudflare is infra/terraform/edge.

module "topics" {
  source              = "../modules/kafka-topics"
  partitions          = var.partitions
  replication_factor  = var.replication_factor
  min_insync_replicas = var.min_insync_replicas
}

module "fleet" {
  source     = "../modules/node-fleet"
  depends_on = [module.topics]

  namespace           = var.namespace
  image               = var.image
  worker_max_replicas = var.partitions
  redis_cluster_nodes = var.redis_cluster_nodes
  env = merge({
    HOWK_KAFKA_BROKERS             = var.brokers_in_cluster
    HOWK_KAFKA_PARTITIONS          = tostring(var.partitions)
    HOWK_KAFKA_REPLICATION_FACTOR  = tostring(var.replication_factor)
    HOWK_KAFKA_MIN_INSYNC_REPLICAS = tostring(var.min_insync_replicas)
  }, var.env)
  secret_env = var.secret_env
}
