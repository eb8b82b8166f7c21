# Kafka topics and the Node fleet together: the topics exist with the configured partitions,
# retention and compaction before any binary starts (docs/OPERATIONS.md, "Deploying with
# Terraform"). The edge on Cloudflare is infra/terraform/edge.

module "topics" {
  source             = "../modules/kafka-topics"
  partitions         = var.partitions
  replication_factor = var.replication_factor
  # Two of three replicas acknowledge every write (acks=all).
  min_insync_replicas = var.replication_factor >= 3 ? 2 : null
}

module "fleet" {
  source     = "../modules/node-fleet"
  depends_on = [module.topics]

  namespace           = var.namespace
  image               = var.image
  worker_max_replicas = var.partitions
  env = merge({
    HOWK_KAFKA_BROKERS            = var.brokers_in_cluster
    HOWK_KAFKA_PARTITIONS         = tostring(var.partitions)
    HOWK_KAFKA_REPLICATION_FACTOR = tostring(var.replication_factor)
  }, var.env)
  secret_env = var.secret_env
}
