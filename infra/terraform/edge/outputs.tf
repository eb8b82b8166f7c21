output "route" {
  value = cloudflare_workers_route.edge.pattern
}

output "hostname" {
  value = cloudflare_dns_record.edge.name
}

output "version_id" {
  description = "The version Terraform deployed (null while deploy_version is false)"
  value       = var.deploy_version ? cloudflare_worker_version.edge[0].id : null
}

output "latest_migration_tag" {
  description = "Last [[migrations]] tag of wrangler.toml: what scripts/edge-deploy.sh must have deployed"
  value       = local.latest_tag
}
