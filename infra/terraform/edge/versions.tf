terraform {
  required_version = ">= 1.6"
  required_providers {
    cloudflare = {
      source  = "cloudflare/cloudflare"
      version = "~> 5.13"
    }
  }
}

provider "cloudflare" {
  # CLOUDFLARE_API_TOKEN in the environment: Workers Scripts:Edit, Workers Routes:Edit, DNS:Edit.
}
