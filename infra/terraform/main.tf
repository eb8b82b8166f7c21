# The Howk edge on Cloudflare: the Worker (with its WebAssembly modules: wasmoon's glue and
# the prebuilt wrappers), the DomainGate Durable Object class on SQLite storage, its
# settings and secrets, and the route. Same shape as wrangler.toml; build the bundle first
# (`npm run edge:build` writes worker.js and the .wasm modules to .tmp/edge-build).

locals {
  wasm_modules = fileset(var.bundle_dir, "*.wasm")
  plain = merge(var.vars, {
    HOWK_EDGE_KAFKA_REST_URL = var.kafka_rest_url
    HOWK_EDGE_REDIS_REST_URL = var.redis_rest_url
  })
}

resource "cloudflare_worker" "edge" {
  account_id = var.account_id
  name       = var.script_name
  observability = {
    enabled = true
  }
}

resource "cloudflare_worker_version" "edge" {
  account_id         = var.account_id
  worker_id          = cloudflare_worker.edge.id
  compatibility_date = var.compatibility_date
  main_module        = "worker.js"

  modules = concat(
    [{
      name         = "worker.js"
      content_type = "application/javascript+module"
      content_file = "${var.bundle_dir}/worker.js"
    }],
    [for m in local.wasm_modules : {
      name         = m
      content_type = "application/wasm"
      content_file = "${var.bundle_dir}/${m}"
    }],
  )

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

  # DomainGate keeps its idempotency keys in SQLite storage (wrangler.toml: tag v1).
  migrations = {
    new_tag            = "v1"
    new_sqlite_classes = ["DomainGate"]
  }
}

resource "cloudflare_workers_deployment" "edge" {
  account_id  = var.account_id
  script_name = cloudflare_worker.edge.name
  strategy    = "percentage"
  versions = [{
    version_id = cloudflare_worker_version.edge.id
    percentage = 100
  }]
}

resource "cloudflare_workers_route" "edge" {
  zone_id = var.zone_id
  pattern = var.route_pattern
  script  = cloudflare_worker.edge.name
}
