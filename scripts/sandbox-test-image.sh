#!/usr/bin/env bash
# Builds the small local image the tests use for docker mode, without any
# registry: a root file system holding the host's python3, bash and a few
# core utilities with their libraries, imported with `podman import` (or
# `docker import`). Real deployments build Dockerfile.sandbox instead.
# With "node" as third argument it also holds the host's node (code-mode tests);
# with "matplotlib", node and the host's Debian matplotlib (python3-matplotlib)
# and what it imports, for the plot tests. A server prewarms python and node
# runners: in an image without node the node runner waits 20 s for a status
# that never comes, which doctor and the server's shutdown then wait out.
#   usage: scripts/sandbox-test-image.sh [cli] [image] [matplotlib|node]
set -euo pipefail
cli=${1:-podman}
image=${2:-codexec-test-sandbox}
extra=${3:-}
# The image's contents version (bump it when the list below changes, so that
# an image built by an older script is rebuilt).
version=3
if [ "$("$cli" image inspect --format '{{index .Config.Labels "codexec.test-image"}}' "$image" 2>/dev/null)" = "$version" ]; then exit 0; fi
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{etc,tmp,proc,dev,sys,workspace,usr/bin,usr/lib,usr/lib64,opt/codexec}
ln -s usr/bin "$root/bin"; ln -s usr/lib "$root/lib"; ln -s usr/lib64 "$root/lib64"; ln -s usr/bin "$root/sbin"
chmod 1777 "$root/tmp"
py=$(readlink -f /usr/bin/python3)
bins=("$py" /usr/bin/bash /usr/bin/dash /usr/bin/cat /usr/bin/ls /usr/bin/echo /usr/bin/sleep /usr/bin/dd
  /usr/bin/id /usr/bin/grep /usr/bin/env /usr/bin/rm /usr/bin/mkdir /usr/bin/head /usr/bin/wc
  /usr/bin/timeout) # codexec runs programs under `timeout` (their deadline; sandbox/container_life.go)
if [ "$extra" = node ] || [ "$extra" = matplotlib ]; then bins+=("$(readlink -f "$(command -v node)")"); fi
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
# copylibs copies the shared libraries the given files need into the root.
copylibs() {
  for f in "$@"; do
    { ldd "$f" 2>/dev/null || true; } | { grep -o '/[^ ]*' || true; } | while read -r lib; do
      if [ ! -e "$root$lib" ]; then
        mkdir -p "$root$(dirname "$lib")"
        cp -L "$lib" "$root$lib"
      fi
    done
  done
}
if [ "$extra" = matplotlib ]; then
  dp=/usr/lib/python3/dist-packages
  mkdir -p "$root$dp" "$root/usr/share"
  for p in matplotlib mpl_toolkits numpy PIL kiwisolver pyparsing dateutil packaging contourpy cycler.py six.py; do
    cp -a "$dp/$p" "$root$dp/"
  done
  cp -aL /usr/share/matplotlib "$root/usr/share/"
  mapfile -t sos < <(find "$root$dp" -name '*.so*' -type f | sed "s|^$root||")
  copylibs "${sos[@]}"
fi
printf 'root:x:0:0::/root:/bin/sh\nnobody:x:65534:65534::/workspace:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
tar -C "$root" -c . | "$cli" import --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' --change "LABEL codexec.test-image=$version" - "$image" >/dev/null
echo "built $image"
