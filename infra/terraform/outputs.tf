output "worker_name" {
  value = cloudflare_worker.edge.name
}

output "version_id" {
  value = cloudflare_worker_version.edge.id
}

output "route" {
  value = cloudflare_workers_route.edge.pattern
}
