#!/usr/bin/env bash
# Builds the small local image the tests use for docker mode, without any
# registry: a root file system holding the host's python3, bash and a few
# core utilities with their libraries, imported with `podman import` (or
# `docker import`). Real deployments build Dockerfile.sandbox instead.
#   usage: scripts/sandbox-test-image.sh [cli] [image] [node]
# A third argument "node" adds the host's node (code-mode tests).
set -euo pipefail
cli=${1:-podman}
image=${2:-codexec-test-sandbox}
with_node=${3:-}
if "$cli" image inspect "$image" >/dev/null 2>&1; then exit 0; fi
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{etc,tmp,proc,dev,sys,workspace,usr/bin,usr/lib,usr/lib64,opt/codexec}
ln -s usr/bin "$root/bin"; ln -s usr/lib "$root/lib"; ln -s usr/lib64 "$root/lib64"; ln -s usr/bin "$root/sbin"
chmod 1777 "$root/tmp"
py=$(readlink -f /usr/bin/python3)
bins=("$py" /usr/bin/bash /usr/bin/dash /usr/bin/cat /usr/bin/ls /usr/bin/echo /usr/bin/sleep /usr/bin/dd
  /usr/bin/id /usr/bin/grep /usr/bin/env /usr/bin/rm /usr/bin/mkdir /usr/bin/head /usr/bin/wc)
if [ "$with_node" = node ]; then bins+=("$(readlink -f "$(command -v node)")"); fi
for b in "${bins[@]}"; do
  cp -a "$b" "$root/usr/bin/"
  ldd "$b" 2>/dev/null | grep -o '/[^ ]*' | while read -r lib; do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
done
ln -s "$(basename "$py")" "$root/usr/bin/python3"
ln -s dash "$root/usr/bin/sh"
pylib=/usr/lib/$(basename "$py")
cp -a "$pylib" "$root/usr/lib/"
rm -rf "$root$pylib/test" "$root$pylib"/*/test "$root$pylib/config-"*
printf 'root:x:0:0::/root:/bin/sh\nnobody:x:65534:65534::/workspace:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
tar -C "$root" -c . | "$cli" import --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' - "$image" >/dev/null
echo "built $image"
