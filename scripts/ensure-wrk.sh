#!/usr/bin/env bash
# Makes sure wrk, the HTTP load generator of `bench/run.sh peers` (scenario 7's closed-loop
# rows, see bench/cmd/loadtest/wrk.go), is installed: Debian's `wrk` package, installed with
# apt-get when missing. Without root or apt, it says what to install and exits 0: loadtest's
# wrk test then skips (and fails under CI), and run.sh peers stops with the same message.
set -euo pipefail
if command -v wrk >/dev/null 2>&1; then
	exit 0
fi
"$(dirname "$0")/debian-install.sh" "the load generator of bench/run.sh peers and its test" wrk || [ $? -eq 2 ]
