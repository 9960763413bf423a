#!/usr/bin/env bash
# Configures podman for docker mode on hosts like CI (root, cgroup v1 hybrid,
# no systemd): runc instead of crun, cgroupfs manager, file event log, no
# network by default. Leaves an existing containers.conf alone.
set -euo pipefail
conf=/etc/containers/containers.conf
if [ -e "$conf" ]; then exit 0; fi
if [ "$(id -u)" != 0 ]; then echo "podman-setup: not root, leaving $conf unwritten (docker-mode tests will skip)" >&2; exit 0; fi
mkdir -p /etc/containers
cat >"$conf" <<'CONF'
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
netns = "none"
pids_limit = 256
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
