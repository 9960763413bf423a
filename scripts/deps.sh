#!/usr/bin/env bash
# Installs the system packages codexec's tests need (Debian/Ubuntu, as root).
# Safe to run repeatedly; skips work that is already done.
set -euo pipefail
pkgs=(bubblewrap podman runc uidmap python3 nodejs)
pkgs+=(passwd) # useradd: the rootless end-to-end pass runs codexec as a normal account it creates
pkgs+=(python3-pip) # install_package tests: pip --target against a local index
pkgs+=(python3-requests) # egress tests: the HTTP client agents use most, through the proxy
pkgs+=(e2fsprogs) # mkfs.ext4: bounded workspace disks (CODEXEC_DISK_LIMIT)
pkgs+=(python3-matplotlib python3-pandas) # plots as images, DataFrame tables (files tests)
pkgs+=(haproxy) # deploy/haproxy: the session-sticky proxy configurations, checked with haproxy -c
pkgs+=(postgresql) # the shared store tests start their own throwaway cluster (internal/pgtest)
pkgs+=(chromium) # the console's browser tests drive Debian's headless Chromium (internal/e2e)
command -v npm >/dev/null 2>&1 || pkgs+=(npm) # nodesource's nodejs already ships npm
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  if [ "$(id -u)" != 0 ]; then
    echo "deps: missing ${missing[*]}; run as root or install them" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# Docker mode runs through podman here (no Docker engine): configure it.
bash "$(dirname "$0")/podman-setup.sh"
# Code-mode end-to-end tests call real MCP servers from npm, pinned by the
# lockfile in internal/e2e/testdata/upstreams (test-only; never shipped).
up="$(cd "$(dirname "$0")/.." && pwd)/internal/e2e/testdata/upstreams"
if [ ! -f "$up/node_modules/.package-lock.json" ] || [ "$up/package-lock.json" -nt "$up/node_modules/.package-lock.json" ]; then
  (cd "$up" && npm ci --no-audit --no-fund --loglevel=error)
fi
# The official TypeScript SDK client (internal/e2e/tsclient_test.go: no
# message over its 10 MiB limit), pinned by its lockfile.
ts="$(dirname "$0")/../internal/e2e/testdata/tsclient"
if ! cmp -s "$ts/package-lock.json" "$ts/node_modules/.package-lock.json.installed" 2>/dev/null; then
  (cd "$ts" && npm ci --no-audit --no-fund --loglevel=error >/dev/null && cp package-lock.json node_modules/.package-lock.json.installed)
fi
# The official TypeScript client 2.x (internal/e2e/tasks_test.go: tool calls
# as MCP Tasks), pinned by its lockfile.
ts2="$(dirname "$0")/../internal/e2e/testdata/tsclient2"
if ! cmp -s "$ts2/package-lock.json" "$ts2/node_modules/.package-lock.json.installed" 2>/dev/null; then
  (cd "$ts2" && npm ci --no-audit --no-fund --loglevel=error >/dev/null && cp package-lock.json node_modules/.package-lock.json.installed)
fi
# The MCP conformance runner (internal/e2e/conformance_test.go,
# scripts/conformance.sh) and the Node.js 22 it runs on (a registry binary
# package: Debian's Node 20 is too old for it), pinned by its lockfile;
# reinstalled only when the lockfile changes.
conf="$(dirname "$0")/../internal/e2e/testdata/conformance"
if ! cmp -s "$conf/package-lock.json" "$conf/node_modules/.package-lock.json.installed" 2>/dev/null; then
  (cd "$conf" && npm ci --no-audit --no-fund --loglevel=error >/dev/null && cp package-lock.json node_modules/.package-lock.json.installed)
fi
# The S3 blob store's tests (internal/s3store, the s3:// end-to-end test) run
# against a real S3 server: Versity's gateway over a POSIX directory, built
# from the Go module proxy into GOPATH/bin, where internal/s3store/s3test
# looks for it. Reinstalled only when the pinned version changes.
vgw_version=v1.8.0
vgw="$(go env GOPATH)/bin/versitygw"
if ! go version -m "$vgw" 2>/dev/null | grep -qE "^\s+mod\s+github.com/versity/versitygw\s+$vgw_version\s"; then
  GOFLAGS=-buildvcs=false go install "github.com/versity/versitygw/cmd/versitygw@$vgw_version"
fi
