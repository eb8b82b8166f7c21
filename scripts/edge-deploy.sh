#!/usr/bin/env bash
# Deploys the Howk edge with wrangler: the first deploy, and every deploy whose wrangler.toml
# carries a Durable Object migration that Cloudflare has not applied yet. Terraform cannot do
# those: Cloudflare's versions API refuses a version that carries a migration, and the
# provider's script resource cannot upload the edge's WebAssembly modules. Terraform
# (infra/terraform/edge) owns the DNS record, the route, and later versions without migrations.
#
#   CLOUDFLARE_API_TOKEN=… CLOUDFLARE_ACCOUNT_ID=… scripts/edge-deploy.sh [--env production] [--dry-run]
#
# Secrets: each of HOWK_EDGE_KAFKA_REST_PASSWORD, HOWK_EDGE_REDIS_REST_TOKEN, HOWK_SECRETS_KEY,
# HOWK_EDGE_API_KEYS (and the names in EDGE_EXTRA_SECRETS, space-separated) that is set in the
# environment is put with `wrangler secret put` after the deploy. Unset ones are left as they are.
set -euo pipefail

cd "$(dirname "$0")/.."
ENV_NAME=production
DRY_RUN=0
while [ $# -gt 0 ]; do
  case "$1" in
    --env) ENV_NAME="$2"; shift 2 ;;
    --dry-run) DRY_RUN=1; shift ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

export WRANGLER_SEND_METRICS=false
WRANGLER=(npx --no wrangler)

# Tags of [[migrations]] in wrangler.toml, in order: the last one is what this deploy applies.
LATEST_TAG="$(sed -n 's/^tag *= *"\([^"]*\)".*/\1/p' wrangler.toml | tail -n 1)"
if [ -z "$LATEST_TAG" ]; then
  echo "wrangler.toml has no [[migrations]] tag" >&2
  exit 1
fi

if [ "$DRY_RUN" = 1 ]; then
  "${WRANGLER[@]}" deploy --env "$ENV_NAME" --dry-run --outdir .tmp/edge-build
  echo "dry run: would deploy migrations up to tag $LATEST_TAG"
  exit 0
fi

: "${CLOUDFLARE_API_TOKEN:?set CLOUDFLARE_API_TOKEN (Workers Scripts:Edit)}"

"${WRANGLER[@]}" deploy --env "$ENV_NAME"

for name in HOWK_EDGE_KAFKA_REST_PASSWORD HOWK_EDGE_REDIS_REST_TOKEN HOWK_SECRETS_KEY HOWK_EDGE_API_KEYS ${EDGE_EXTRA_SECRETS:-}; do
  if [ -n "${!name:-}" ]; then
    printf '%s' "${!name}" | "${WRANGLER[@]}" secret put "$name" --env "$ENV_NAME"
  fi
done

cat <<MSG
Edge deployed with wrangler; migrations applied up to tag "$LATEST_TAG".
For Terraform (infra/terraform/edge), set:
  deployed_migration_tag = "$LATEST_TAG"
MSG
