#!/usr/bin/env bash
# Makes sure redis-server is installed (Debian's package): the tests of the shared rate
# limiter start a real one. As root it installs the package when missing; otherwise it says how.
set -euo pipefail
if command -v redis-server >/dev/null 2>&1; then
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "ensure-redis: redis-server not found; install it (sudo apt-get install redis-server)" >&2
	exit 1
fi
echo "==> Installing redis-server (Debian's package) for the shared rate-limit tests" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -qq -o DPkg::Lock::Timeout=600 redis-server >/dev/null 2>&1 || { apt-get update -qq -o DPkg::Lock::Timeout=600 >/dev/null && apt-get install -y -qq -o DPkg::Lock::Timeout=600 redis-server >/dev/null; }
# The package starts a system service where there is an init; the tests run their own.
command -v redis-server >/dev/null
