#!/usr/bin/env bash
# Makes sure redis-server is installed for the tests of the shared rate limiter, which start a
# real one: Debian's `redis-server` package, installed with apt-get (as root, or through
# passwordless sudo) when missing. Otherwise it says what to install and exits 0, like the
# other ensure-*.sh: those tests then skip (and fail under CI).
set -euo pipefail
if command -v redis-server >/dev/null 2>&1; then
	exit 0
fi
"$(dirname "$0")/debian-install.sh" "the shared rate-limit tests (a minute)" redis-server || [ $? -eq 2 ]
# The package starts a system service where there is an init; the tests run their own.
