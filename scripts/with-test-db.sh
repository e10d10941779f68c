#!/usr/bin/env bash
# Runs a command with TEST_DATABASE_URL set. When it is already set, the command runs as is;
# otherwise a throwaway PostgreSQL cluster is started for it and removed afterwards.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# The shared rate limiter is tested against a real redis-server (Debian's package).
"$here/ensure-redis.sh"
if [ -n "${TEST_DATABASE_URL:-}" ]; then
	exec "$@"
fi
tmp=$(mktemp -d /tmp/switchboard-test.XXXXXX)
chmod 755 "$tmp"
port=$("$here/freeport.sh")
cleanup() {
	"$here/pgcluster.sh" stop "$tmp/data" || true
	rm -rf "$tmp"
}
trap cleanup EXIT
echo "==> Starting a throwaway PostgreSQL for the tests on 127.0.0.1:$port (removed afterwards; TEST_DATABASE_URL uses yours)" >&2
"$here/pgcluster.sh" start "$tmp/data" "$port" fast
export TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
"$@"
