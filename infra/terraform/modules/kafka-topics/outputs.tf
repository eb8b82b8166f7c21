output "topics" {
  description = "Topic name → partitions"
  value       = { for k, t in kafka_topic.howk : t.name => t.partitions }
}
