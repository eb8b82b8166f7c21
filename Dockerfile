# syntax=docker/dockerfile:1
# One image for every Howk binary; the command picks which (docs/OPERATIONS.md, "Containers"):
#   docker build -t howk .
#   docker run --rm -p 127.0.0.1:8080:8080 howk                   # howk-dev (embedded, no Kafka/Redis), API keys on:
#                                                                  # its log prints an admin key for the run
#   docker run --rm howk node bin/howk-worker.mjs                 # or howk-api, -scheduler, -reconciler, -bridge
# The binaries run TypeScript through tsx's loader (a production dependency): nothing to
# transpile. What needs compiling is native: better-sqlite3 (howk-dev's file store).

FROM node:20-bookworm-slim AS build
# better-sqlite3 compiles from source when its prebuilt binary cannot be fetched.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NPM_CONFIG_UPDATE_NOTIFIER=false NPM_CONFIG_FUND=false NPM_CONFIG_AUDIT=false
COPY package.json package-lock.json ./
# Every dependency (dev ones included) so install scripts and native builds run here ...
RUN npm ci
COPY . .
# ... then only what the runtime needs is kept.
RUN npm prune --omit=dev && npm cache clean --force

FROM node:20-bookworm-slim AS runtime
# API keys on for every binary of the image (howk-api's default already): howk-dev must listen
# on every interface of the container, and it refuses that with keys off (docs/SECURITY.md,
# "The dev server: safe where it runs"). A compose service may still set its own.
ENV NODE_ENV=production \
    KAFKAJS_NO_PARTITIONER_WARNING=1 \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    HOWK_API_AUTH_ENABLED=true
WORKDIR /app
COPY --from=build --chown=root:root /app/node_modules ./node_modules
COPY --chown=root:root package.json ./
COPY --chown=root:root bin ./bin
COPY --chown=root:root core ./core
COPY --chown=root:root workers ./workers
COPY --chown=root:root console ./console
COPY --chown=root:root scripts/container ./scripts/container
COPY --chown=root:root tsconfig.json LICENSE ./
# The code stays root-owned and read-only to the process; howk-dev writes only under /data.
RUN mkdir -p /data && chown node:node /data
USER node
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=5 \
  CMD ["node", "scripts/container/healthcheck.mjs"]
CMD ["node", "bin/howk-dev.mjs", "--data", "/data", "--host", "0.0.0.0"]
