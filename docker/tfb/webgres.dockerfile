# TechEmpower entry for webgres (frameworks/C/webgres/webgres.dockerfile).
# The framework directory holds a copy of the webgres repository with this
# file and benchmark_config.json at its top (docker/tfb/export.sh makes it).
#
# webgres serves from the Postgres inside this container, so TFB's query
# counts are read from it: pg_stat_statements is preloaded with track = all,
# and Postgres listens on 5432 for benchmarkdbuser/benchmarkdbpass.
FROM debian:bookworm

COPY . /opt/webgres
WORKDIR /opt/webgres

RUN docker/build.sh && rm -rf /var/lib/apt/lists/*

ENV WEBGRES_DATA=/var/lib/webgres/data \
    WEBGRES_LISTEN=0.0.0.0:8080 \
    WEBGRES_PG_LISTEN=* \
    PGPORT=5432
RUN docker/start.sh --init-only

EXPOSE 8080 5432
STOPSIGNAL SIGTERM
CMD ["docker/start.sh"]
