# The Node fleet on Kubernetes: one Deployment per binary of the Howk image, probed on /health
# (liveness) and /ready (readiness: Kafka and Redis answer), configured by HOWK_* variables
# from a ConfigMap and a Secret, and an HPA that scales howk-worker on consumer lag.

locals {
  labels = { "app.kubernetes.io/part-of" = "howk" }

  # Unset when empty: a binary then opens the one Redis of HOWK_REDIS_URL, as before clusters.
  redis_env = length(var.redis_cluster_nodes) == 0 ? {} : { HOWK_REDIS_CLUSTER_NODES = join(",", var.redis_cluster_nodes) }

  # port: where the binary serves /health and /ready (api.port, bridge.port, metrics.port).
  binaries = {
    api        = { args = [], port = 8080, env = { HOWK_API_PORT = "8080", HOWK_API_HOST = "0.0.0.0" } }
    worker     = { args = [], port = 9464, env = { HOWK_METRICS_PORT = "9464", HOWK_METRICS_HOST = "0.0.0.0" } }
    scheduler  = { args = [], port = 9464, env = { HOWK_METRICS_PORT = "9464", HOWK_METRICS_HOST = "0.0.0.0" } }
    reconciler = { args = ["--watch"], port = 9464, env = { HOWK_METRICS_PORT = "9464", HOWK_METRICS_HOST = "0.0.0.0" } }
    bridge     = { args = [], port = 8090, env = { HOWK_BRIDGE_PORT = "8090", HOWK_BRIDGE_HOST = "0.0.0.0" } }
  }
}

resource "kubernetes_config_map_v1" "howk" {
  metadata {
    name      = "howk"
    namespace = var.namespace
    labels    = local.labels
  }
  # Every binary reads this ConfigMap: all of them reach Redis the same way.
  data = merge(var.env, local.redis_env)
}

resource "kubernetes_secret_v1" "howk" {
  metadata {
    name      = "howk"
    namespace = var.namespace
    labels    = local.labels
  }
  data = var.secret_env
}

resource "kubernetes_deployment_v1" "howk" {
  for_each = local.binaries

  metadata {
    name      = "howk-${each.key}"
    namespace = var.namespace
    labels    = merge(local.labels, { "app.kubernetes.io/name" = "howk-${each.key}" })
  }

  spec {
    # howk-worker's count belongs to its HPA once it exists.
    replicas = each.key == "worker" ? null : var.replicas[each.key]

    selector {
      match_labels = { "app.kubernetes.io/name" = "howk-${each.key}" }
    }

    template {
      metadata {
        labels = merge(local.labels, { "app.kubernetes.io/name" = "howk-${each.key}" })
        annotations = {
          "prometheus.io/scrape" = "true"
          "prometheus.io/port"   = tostring(each.value.port)
        }
      }

      spec {
        # Long enough for a worker to finish its batch and commit (SIGTERM, then stop).
        termination_grace_period_seconds = 60

        security_context {
          run_as_non_root = true
          run_as_user     = 1000
          fs_group        = 1000
        }

        container {
          name    = "howk-${each.key}"
          image   = var.image
          command = concat(["node", "bin/howk-${each.key}.mjs"], each.value.args)

          env_from {
            config_map_ref {
              name = kubernetes_config_map_v1.howk.metadata[0].name
            }
          }
          env_from {
            secret_ref {
              name = kubernetes_secret_v1.howk.metadata[0].name
            }
          }
          dynamic "env" {
            for_each = each.value.env
            content {
              name  = env.key
              value = env.value
            }
          }

          port {
            name           = "http"
            container_port = each.value.port
          }

          liveness_probe {
            http_get {
              path = "/health"
              port = each.value.port
            }
            initial_delay_seconds = 10
            period_seconds        = 10
            failure_threshold     = 3
          }

          readiness_probe {
            http_get {
              path = "/ready"
              port = each.value.port
            }
            period_seconds    = 5
            failure_threshold = 2
          }

          resources {
            requests = var.resources.requests
            limits   = var.resources.limits
          }

          security_context {
            allow_privilege_escalation = false
            read_only_root_filesystem  = true
          }

          # tsx keeps its transpile cache under /tmp.
          volume_mount {
            name       = "tmp"
            mount_path = "/tmp"
          }
        }

        volume {
          name = "tmp"
          empty_dir {}
        }
      }
    }
  }
}

resource "kubernetes_service_v1" "howk" {
  for_each = { for k, b in local.binaries : k => b if contains(["api", "bridge"], k) }

  metadata {
    name      = "howk-${each.key}"
    namespace = var.namespace
    labels    = local.labels
  }

  spec {
    selector = { "app.kubernetes.io/name" = "howk-${each.key}" }
    port {
      name        = "http"
      port        = each.value.port
      target_port = each.value.port
    }
  }
}

# Scales howk-worker on the lag of its consumer group, read from an external metric (a Kafka
# exporter's lag served through a metrics adapter such as prometheus-adapter or KEDA).
resource "kubernetes_horizontal_pod_autoscaler_v2" "worker" {
  metadata {
    name      = "howk-worker"
    namespace = var.namespace
    labels    = local.labels
  }

  spec {
    min_replicas = var.replicas["worker"]
    max_replicas = var.worker_max_replicas

    scale_target_ref {
      api_version = "apps/v1"
      kind        = "Deployment"
      name        = kubernetes_deployment_v1.howk["worker"].metadata[0].name
    }

    metric {
      type = "External"
      external {
        metric {
          name = var.lag_metric_name
          selector {
            match_labels = var.lag_metric_selector
          }
        }
        target {
          type          = "AverageValue"
          average_value = var.lag_per_worker
        }
      }
    }

    # A rebalance moves partitions on every scale: scale down slowly.
    behavior {
      scale_down {
        stabilization_window_seconds = 300
        select_policy                = "Max"
        policy {
          type           = "Pods"
          value          = 1
          period_seconds = 120
        }
      }
    }
  }
}
