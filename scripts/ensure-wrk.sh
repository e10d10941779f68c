#!/usr/bin/env bash
# Makes sure wrk, the HTTP load generator of `bench/run.sh peers` (scenario 7's closed-loop
# rows, see bench/cmd/loadtest/wrk.go), is installed: Debian's `wrk` package, installed with
# apt-get when missing. Without root or apt, it says what to install and exits 0: loadtest's
# wrk test then skips (and fails under CI), and run.sh peers stops with the same message.
set -euo pipefail
if command -v wrk >/dev/null 2>&1; then
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "==> wrk is missing and apt-get is not available: install wrk (https://github.com/wg/wrk) for the load generator's test and bench/run.sh peers" >&2
	exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		sudo="sudo -n"
	else
		echo "==> wrk is missing: install it with \`apt-get install wrk\` (as root) for the load generator's test and bench/run.sh peers" >&2
		exit 0
	fi
fi
echo "==> Installing Debian's wrk, the load generator of bench/run.sh peers (apt-get)" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >&2
$sudo apt-get install -y -qq --no-install-recommends wrk >&2
