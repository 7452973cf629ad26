# NATS with JetStream from Debian's nats-server, for machines where the nats image cannot be pulled.
# Entrypoint like the official image's: the compose command (-c ... -js -sd /data -m 8222) is its argument list.
FROM localhost/debian:bookworm
RUN apt-get update -qq && apt-get install -y -qq nats-server >/dev/null && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /data
# Only the client port: podman lists every exposed port among a container's port bindings, published or not, and
# testcontainers 12 then times out waiting for the unpublished ones (8222 is reached inside the container network).
EXPOSE 4222
ENTRYPOINT ["nats-server"]
CMD ["-js", "-sd", "/data", "-m", "8222"]
