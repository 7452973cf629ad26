# NATS with JetStream for machines where the nats image cannot be pulled: the nats-server that scripts/infra.sh builds
# from the Go module proxy (deploy/nats/VERSION, the version of every other NATS here), on the Debian base.
# scripts/containers/images.sh puts the binary into the build context. Entrypoint like the official image's: the
# compose command (-c ... -js -sd /data -m 8222) is its argument list.
FROM localhost/debian:bookworm
COPY nats-server /usr/local/bin/nats-server
RUN mkdir -p /data /etc/nats && nats-server --version
# Only the client port: podman lists every exposed port among a container's port bindings, published or not, and
# testcontainers 12 then times out waiting for the unpublished ones (8222 is reached inside the container network).
EXPOSE 4222
ENTRYPOINT ["nats-server"]
CMD ["-js", "-sd", "/data", "-m", "8222"]
