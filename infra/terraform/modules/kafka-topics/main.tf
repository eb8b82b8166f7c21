# One kafka_topic per Howk topic, shaped like the topics the binaries create at start-up
# (core/pipeline/topics.ts). Owning them here means `terraform apply` raises partitions and
# sets retention and compaction of existing topics, as `howk topics migrate` does.

locals {
  # The compacted topics that every instance replays whole and in order keep one partition.
  topics = {
    pending        = { partitions = var.partitions, compacted = false }
    slow           = { partitions = var.partitions, compacted = false }
    results        = { partitions = var.partitions, compacted = false }
    deadletter     = { partitions = var.partitions, compacted = false }
    state          = { partitions = var.partitions, compacted = true }
    scripts        = { partitions = 1, compacted = true }
    keys           = { partitions = 1, compacted = true }
    config_secrets = { partitions = 1, compacted = true }
    guards         = { partitions = 1, compacted = true }
    applications   = { partitions = 1, compacted = true }
    messages       = { partitions = 1, compacted = false }
  }
}

resource "kafka_topic" "howk" {
  for_each           = local.topics
  name               = var.topic_names[each.key]
  partitions         = each.value.partitions
  replication_factor = var.replication_factor

  config = merge(
    each.value.compacted ? { "cleanup.policy" = "compact" } : { "cleanup.policy" = "delete", "retention.ms" = tostring(var.retention_ms) },
    var.min_insync_replicas == null ? {} : { "min.insync.replicas" = tostring(var.min_insync_replicas) },
  )

  # Fewer partitions would mean deleting the topic and every webhook on it.
  lifecycle {
    prevent_destroy = true
    # Every acks=all write would be refused.
    precondition {
      condition     = var.min_insync_replicas == null || var.min_insync_replicas <= var.replication_factor
      error_message = "min_insync_replicas is above replication_factor: every write would be refused."
    }
  }
}
