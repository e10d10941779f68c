#!/usr/bin/env bash
# `make build`: bin/switchboard, saying what happens while the first build compiles every
# dependency (a few minutes on a fresh clone; seconds afterwards).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
echo "==> Building bin/switchboard ($("$GO" env GOVERSION))"
if ! GOPROXY=off GOFLAGS=-mod=mod "$GO" list -deps ./cmd/switchboard >/dev/null 2>&1; then
	echo "    downloading modules first (the \`go: downloading\` lines)"
fi
"$GO" build -o bin/switchboard ./cmd/switchboard &
pid=$!
trap 'kill $pid 2>/dev/null || true' INT TERM
start=$SECONDS
next=15
while kill -0 "$pid" 2>/dev/null; do
	sleep 1
	if (( SECONDS - start >= next )); then
		echo "    still compiling ($((SECONDS - start))s; the first build compiles every dependency, later builds take seconds)"
		next=$((next + 30))
	fi
done
wait "$pid"
echo "    built in $((SECONDS - start))s"
