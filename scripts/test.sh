#!/usr/bin/env bash
# The suite of `make test`: the static checks (generation drift, gofmt, golangci-lint with govet)
# and the tests, side by side rather than one after the other.
#
# Why side by side: on a fresh clone most of the checks' time is compiling their tools (sqlc,
# golangci-lint) and most of the tests' time is waiting (PostgreSQL, Chromium, timers of the
# retry and delivery tests), so on two cores the one fills the other's idle time. Nothing is
# dropped: either failing fails the run, and the checks' output is printed as one block after
# the tests' summary, so it never interleaves with it.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}

log=$(mktemp /tmp/switchboard-checks.XXXXXX)
trap 'rm -f "$log"' EXIT

echo "==> Checks (generation drift, gofmt, golangci-lint with govet) start beside the tests; their output follows the tests' summary"
start=$(date +%s)
(
	make --no-print-directory GO="$GO" check-generate lint >"$log" 2>&1
	rc=$?
	echo "==> Checks finished $(($(date +%s) - start)) s after the start" >>"$log"
	echo $rc >"$log.rc"
) &
checks=$!

echo "==> Tests: go test -race on a throwaway PostgreSQL (compiling with -race comes first: minutes on a fresh clone); a line per package as it finishes"
"$GO" build -o bin/testsummary ./scripts/testsummary || exit 1
scripts/with-test-db.sh "$GO" test -race -count=1 -json ./... | bin/testsummary
tests=$?
echo "==> Tests done after $(($(date +%s) - start)) s"

wait "$checks"
checks_rc=$(cat "$log.rc" 2>/dev/null || echo 1)
rm -f "$log.rc"
cat "$log"
echo "==> Checks exit status $checks_rc; the whole run took $(($(date +%s) - start)) s"
if [ "$tests" -ne 0 ] || [ "$checks_rc" -ne 0 ]; then
	exit 1
fi
