#!/usr/bin/env bash
# Runs codexec's performance benchmarks. Each reports its figure next to a
# baseline measured in the same loop (bare interpreter, raw driver pipe,
# sequential log scan), as a ratio. Pass "long" to include the 1M-execution
# log-search benchmark (several minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
run() { echo "== $*"; "$@" 2>&1 | grep -E '^(Benchmark|ok|FAIL)'; }
run env CODEXEC_TEST_SANDBOX_MODE=subprocess go test ./internal/e2e/ -run '^$' -bench ExecutePythonVsBare -benchtime 200x
run go test ./internal/engine/ -run '^$' -bench EngineExecuteVsBare -benchtime 200x
for mode in subprocess namespace docker; do
  echo "== latency and throughput targets (P1-P5), $mode mode"
  CODEXEC_TEST_SANDBOX_MODE=$mode go test ./internal/e2e/ -run '^$' -bench Targets -benchtime 1x -v 2>&1 | grep -E ' P[0-9]|FAIL|skip' || true
done
run go test ./internal/e2e/ -run '^$' -bench SandboxModes -benchtime 50x
run go test ./internal/sandbox/ -run '^$' -bench NamespaceStages -benchtime 40x
run env CODEXEC_TEST_SANDBOX_MODE=subprocess go test ./internal/e2e/ -run '^$' -bench SendToSessionRoundTrip -benchtime 2000x
run go test ./internal/session/ -run '^$' -bench ManagerExec -benchtime 2000x
run go test ./internal/output/ -run '^$' -bench SinkBulk
run go test ./internal/e2e/ -run '^$' -bench FileTransfer10MBVsCp -benchtime 10x
run go test ./internal/shell/ -run '^$' -bench . -benchtime 2s
run go test ./internal/e2e/ -run '^$' -bench CodeModeCallOverhead -benchtime 500x
run go test ./internal/e2e/ -run '^$' -bench 'CodeModeTokenEconomy|CodeModeToolsListGrowth' -benchtime 1x
run env CODEXEC_TEST_SANDBOX_MODE=subprocess go test ./internal/e2e/ -run '^$' -bench LoadHTTPvsStdio -benchtime 1x -timeout 20m
if [ "${1:-}" = long ]; then
  run go test ./internal/logindex/ -run '^$' -bench History -benchtime 100x -timeout 30m
fi
