output "deployments" {
  value = [for d in kubernetes_deployment_v1.howk : d.metadata[0].name]
}

output "api_service" {
  value = "${kubernetes_service_v1.howk["api"].metadata[0].name}.${var.namespace}.svc:8080"
}
