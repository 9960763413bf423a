#!/usr/bin/env bash
# Runs the official MCP conformance runner (pinned, with the Node.js it needs,
# in internal/e2e/testdata/conformance) against codexec's HTTP endpoint, once
# per protocol revision's requirement set, with the expected failures that
# cannot apply to codexec (expected-failures.yaml there; docs/conformance.md).
# Usage: scripts/conformance.sh [revision...]   (default: 2025-11-25 2026-07-28)
set -euo pipefail
cd "$(dirname "$0")/.."
conf=internal/e2e/testdata/conformance
if ! cmp -s "$conf/package-lock.json" "$conf/node_modules/.package-lock.json.installed" 2>/dev/null; then
  (cd "$conf" && npm ci --no-audit --no-fund --loglevel=error >/dev/null && cp package-lock.json node_modules/.package-lock.json.installed)
fi
work=$(mktemp -d)
go build -o "$work/codexec" ./cmd/codexec
mkdir "$work/data"
CODEXEC_DATA_DIR="$work/data" CODEXEC_SANDBOX_MODE=subprocess "$work/codexec" serve --http 127.0.0.1:0 2>"$work/server.log" &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$work"' EXIT
addr=""
for _ in $(seq 1 300); do
  addr=$(sed -n 's/.*msg="http listening" addr=\([^ ]*\).*/\1/p' "$work/server.log" | head -1)
  [ -n "$addr" ] && break
  sleep 0.1
done
if [ -z "$addr" ]; then echo "codexec did not start:" >&2; cat "$work/server.log" >&2; exit 1; fi
status=0
for rev in "${@:-2025-11-25 2026-07-28}"; do
  for r in $rev; do
    echo "== requirements of $r"
    (cd "$work" && NO_COLOR=1 "$OLDPWD/$conf/node_modules/.bin/node" "$OLDPWD/$conf/node_modules/.bin/conformance" server \
      --url "http://$addr/mcp" --requirements "$r" --expected-failures "$OLDPWD/$conf/expected-failures.yaml") || status=1
  done
done
exit $status
