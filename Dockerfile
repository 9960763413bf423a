# The codexec server image: MCP over Streamable HTTP on port 8080.
#
#   docker build -t codexec .            (or: podman build -t codexec .)
#
# By default it runs as the unprivileged user codexec in subprocess mode:
# the container is then the only boundary around the code agents run (see
# docs/install.md). The namespace sandbox (bubblewrap, cgroups, seccomp,
# Landlock; each run as uid 65534 without network) needs root and a few
# rights inside the container; docs/install.md lists the exact flags:
#
#   docker run --user 0 -e CODEXEC_SANDBOX_MODE=namespace \
#     --cap-add SYS_ADMIN --cap-add SYS_PTRACE \
#     --security-opt systempaths=unconfined --security-opt apparmor=unconfined \
#     -v /sys/fs/cgroup:/sys/fs/cgroup:rw -p 8080:8080 codexec
#
# Give it credentials before it is reachable by anyone else:
# CODEXEC_AUTH_TOKENS (a token file) or CODEXEC_OAUTH_ISSUER.

# The Go version of go.mod's go directive (a test checks they agree).
ARG GO_VERSION=1.26
FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Static binaries: codexec and its sandbox helper (the namespace sandbox
# runs codexec-sandbox from beside codexec; without it codexec re-executes
# itself). No VCS stamping: the build context has no .git.
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -o /out/ ./cmd/codexec ./cmd/codexec-sandbox

FROM debian:bookworm-slim
# python3, node and bash run the code; python3-pip and npm serve
# install_package; bubblewrap is the namespace sandbox; e2fsprogs
# (mkfs.ext4) bounds each run's disk where loop devices are available.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates python3 python3-pip nodejs npm bash coreutils \
    bubblewrap e2fsprogs \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/ /usr/local/bin/
RUN useradd --system --uid 10001 --user-group --home-dir /var/lib/codexec --create-home codexec \
 && chmod 0700 /var/lib/codexec
ENV CODEXEC_DATA_DIR=/var/lib/codexec \
    CODEXEC_SANDBOX_MODE=subprocess
VOLUME /var/lib/codexec
USER codexec
WORKDIR /var/lib/codexec
EXPOSE 8080
ENTRYPOINT ["codexec"]
CMD ["serve", "--http", "0.0.0.0:8080"]
