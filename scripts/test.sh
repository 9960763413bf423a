#!/usr/bin/env bash
# Runs every test of codexec on a fresh machine: installs system packages the
# tests need, then the whole Go suite with the race detector.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
gofmt_out=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$gofmt_out" ]; then echo "gofmt needed: $gofmt_out" >&2; exit 1; fi
go vet ./...
# The build without the trace exporter (docs/observability.md) must keep
# compiling, and its tracing package refuses an endpoint.
go vet -tags notrace ./...
go test -count=1 -tags notrace ./internal/tracing
# The end-to-end package alone takes ~15 minutes on a quiet 2-core machine
# with the race detector; the timeout leaves room for a slower one.
go test -race -count=1 -timeout 35m ./... "$@"
# The Helm chart: rendered with the Helm library and every object decoded
# strictly into the Kubernetes API types. Its own module (deploy/helm/go.mod),
# so codexec does not depend on Helm; compiling Helm is slow, and the test
# has no concurrency worth the race detector.
(cd deploy/helm && go vet ./... && go test -count=1 -timeout 15m ./...)
# The end-to-end suite again with the light subprocess backend (the run above
# uses the default auto mode, which picks the namespace sandbox where it works):
# only the tests whose outcome can depend on the sandbox mode; the others
# (marked sameInEveryMode: servers with a pinned mode, protocol, schemas,
# authentication, stores) would repeat the first pass and skip.
CODEXEC_TEST_SANDBOX_MODE=subprocess CODEXEC_TEST_MODE_DEPENDENT_ONLY=1 go test -count=1 -timeout 20m ./internal/e2e/ "$@"
# Once more as a normal account (codexec-rootless, created when missing):
# namespace mode without root. Only the security-relevant and sandbox-
# dependent tests (isolation, hostile code, edge attacks, egress, the
# rootless tests, sessions, checkpoints, execute_code, fidelity, end
# reasons), to keep the whole script's time in bounds; first with per-process limits only
# (no cgroup), then the rootless, isolation and hostile tests again with a
# cgroup delegated to the account, as an operator or systemd would give it.
rootless_tests='^Test(Rootless|Isolation|ReusedCgroupCounters|Hostile|EdgeAttacks|Egress|Session|CallerChosenSession|CloseSession|CancelInSession|Execute|ForkSession|PauseRestartResume|PauseWhenIdle|ResumeContext|Checkpoint|Fidelity|EndReasons)'
CODEXEC_TEST_SANDBOX_MODE=rootless CODEXEC_TEST_MODE_DEPENDENT_ONLY=1 go test -count=1 -timeout 20m ./internal/e2e/ -run "$rootless_tests" "$@"
CODEXEC_TEST_SANDBOX_MODE=rootless CODEXEC_TEST_MODE_DEPENDENT_ONLY=1 CODEXEC_TEST_ROOTLESS_CGROUP=1 \
  go test -count=1 -timeout 10m ./internal/e2e/ -run '^Test(Rootless|Isolation|ReusedCgroupCounters|Hostile)' "$@"
# A short fuzz run of the stdio wire: every malformed line gets one JSON-RPC
# error and the server behind it keeps answering (the seeds run in the suite
# above; this explores beyond them).
go test -run '^$' -fuzz '^FuzzStream$' -fuzztime 20s -fuzzminimizetime 100x ./internal/stdiowire
