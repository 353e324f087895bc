# PostgreSQL, Redis and HAProxy for compose.yaml, from Debian's packages on the same standard base as
# the service's image, so the deployment needs one base image and nothing else from a registry.
# Each is a target: `docker build -f deploy/services.Dockerfile --target postgres deploy`.
ARG BASE=debian:bookworm-slim

FROM ${BASE} AS postgres
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-15 \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /var/lib/postgresql/data /var/run/postgresql \
 && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
COPY postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint
ENV PATH=/usr/lib/postgresql/15/bin:$PATH PGDATA=/var/lib/postgresql/data
USER postgres
VOLUME ["/var/lib/postgresql/data"]
# PostgreSQL stops cleanly on SIGINT ("fast" shutdown: transactions rolled back, then a checkpoint).
STOPSIGNAL SIGINT
ENTRYPOINT ["postgres-entrypoint"]

FROM ${BASE} AS redis
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server \
 && rm -rf /var/lib/apt/lists/*
COPY redis-entrypoint.sh /usr/local/bin/redis-entrypoint
USER redis
ENTRYPOINT ["redis-entrypoint"]

FROM ${BASE} AS haproxy
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends haproxy \
 && rm -rf /var/lib/apt/lists/*
COPY haproxy.cfg /etc/haproxy/haproxy.cfg
USER haproxy
# HAProxy finishes the requests in flight and stops on SIGUSR1 (soft stop).
STOPSIGNAL SIGUSR1
ENTRYPOINT ["haproxy", "-db", "-f", "/etc/haproxy/haproxy.cfg"]
