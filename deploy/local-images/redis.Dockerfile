# Redis from Debian's redis-server, for machines where the redis image cannot be pulled. Like the official image:
# listens on every interface without protected mode (the container network is the boundary), data in /data.
FROM localhost/debian:bookworm
RUN apt-get update -qq && apt-get install -y -qq redis-server >/dev/null && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /data && chown redis:redis /data
USER redis
WORKDIR /data
EXPOSE 6379
CMD ["redis-server", "--bind", "0.0.0.0", "--protected-mode", "no", "--dir", "/data"]
