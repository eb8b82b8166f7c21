terraform {
  required_version = ">= 1.6"
  required_providers {
    kafka = {
      source  = "Mongey/kafka"
      version = "~> 0.7"
    }
    kubernetes = {
      source  = "hashicorp/kubernetes"
      version = "~> 2.30"
    }
  }
}

provider "kafka" {
  bootstrap_servers = var.kafka_bootstrap_servers
  tls_enabled       = var.kafka_tls_enabled
}

provider "kubernetes" {
  # KUBE_CONFIG_PATH / KUBE_CTX in the environment, or in-cluster credentials.
}
