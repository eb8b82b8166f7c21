# The Howk edge on Cloudflare: what Terraform can own. The Worker itself, its Durable Object
# class and every migration are deployed by `wrangler deploy` (scripts/edge-deploy.sh):
# Cloudflare's versions API refuses a version that carries a Durable Object migration, and the
# provider's script resource cannot upload the WebAssembly modules the edge needs. Run the
# script first (first deploy, and again whenever wrangler.toml gains a [[migrations]] entry),
# then this. docs/OPERATIONS.md, "Deploying with Terraform".

locals {
  worker_id     = coalesce(var.worker_id, var.script_name)
  wrangler_toml = coalesce(var.wrangler_toml, "${path.module}/../../../wrangler.toml")
  bundle_dir    = coalesce(var.bundle_dir, "${path.module}/../../../.tmp/edge-build")
  # Tags of wrangler.toml's [[migrations]], in order; the last one must be deployed already.
  migration_tags = regexall("(?m)^tag\\s*=\\s*\"([^\"]+)\"", file(local.wrangler_toml))
  latest_tag     = length(local.migration_tags) > 0 ? local.migration_tags[length(local.migration_tags) - 1][0] : ""

  wasm_modules = var.deploy_version ? fileset(local.bundle_dir, "*.wasm") : []
  plain = merge(var.vars, {
    HOWK_EDGE_KAFKA_REST_URL = var.kafka_rest_url
    HOWK_EDGE_REDIS_REST_URL = var.redis_rest_url
  })
}

# The hostname the route serves. Proxied, with no origin of its own: the Worker answers.
resource "cloudflare_dns_record" "edge" {
  zone_id = var.zone_id
  name    = var.hostname
  type    = "AAAA"
  content = "100::"
  proxied = true
  ttl     = 1
  comment = "Howk edge (Worker route ${var.route_pattern})"
}

resource "cloudflare_workers_route" "edge" {
  zone_id = var.zone_id
  pattern = var.route_pattern
  script  = var.script_name
}

# A version of the Worker without a migration: new code, settings or secrets once the Durable
# Object class exists. Off until the first `wrangler deploy` has run (deploy_version = true).
resource "cloudflare_worker_version" "edge" {
  count              = var.deploy_version ? 1 : 0
  account_id         = var.account_id
  worker_id          = local.worker_id
  compatibility_date = var.compatibility_date
  main_module        = "worker.js"

  modules = concat(
    [{
      name         = "worker.js"
      content_type = "application/javascript+module"
      content_file = "${local.bundle_dir}/worker.js"
    }],
    [for m in local.wasm_modules : {
      name         = m
      content_type = "application/wasm"
      content_file = "${local.bundle_dir}/${m}"
    }],
  )

  # The binding names an existing class; no `migrations` here, ever (the API refuses them).
  bindings = concat(
    [{
      name       = "GATE"
      type       = "durable_object_namespace"
      class_name = "DomainGate"
    }],
    [for k, v in local.plain : {
      name = k
      type = "plain_text"
      text = v
    }],
    [for k in nonsensitive(keys(var.secrets)) : {
      name = k
      type = "secret_text"
      text = var.secrets[k]
    }],
  )

  lifecycle {
    precondition {
      condition     = var.deployed_migration_tag == local.latest_tag
      error_message = "wrangler.toml's last migration is \"${local.latest_tag}\" but deployed_migration_tag is \"${var.deployed_migration_tag}\": run scripts/edge-deploy.sh (wrangler deploy) first, then set deployed_migration_tag."
    }
  }
}

resource "cloudflare_workers_deployment" "edge" {
  count       = var.deploy_version ? 1 : 0
  account_id  = var.account_id
  script_name = var.script_name
  strategy    = "percentage"
  versions = [{
    version_id = cloudflare_worker_version.edge[0].id
    percentage = 100
  }]
}
