#!/usr/bin/env bash
# `make run`: the server in development mode. Without DATABASE_URL, a throwaway PostgreSQL
# cluster is started in a temporary directory and removed when the server stops.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
export APP_ENV=${APP_ENV:-development}
export BOOTSTRAP_API_KEY=${BOOTSTRAP_API_KEY:-sk-svc_development-only-key-00000000000000000000}
if [ -z "${DATABASE_URL:-}" ]; then
	tmp=$(mktemp -d /tmp/switchboard-run.XXXXXX)
	chmod 755 "$tmp"
	port=$("$here/freeport.sh")
	trap '"$here/pgcluster.sh" stop "$tmp/data"; rm -rf "$tmp"' EXIT
	"$here/pgcluster.sh" start "$tmp/data" "$port"
	export DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
	echo "switchboard: throwaway PostgreSQL on 127.0.0.1:$port (removed on exit)" >&2
fi
echo "switchboard: try  curl -H \"Authorization: Bearer $BOOTSTRAP_API_KEY\" http://localhost:${ADDR:-:8080}/v1/models" | sed 's#localhost::#localhost:#' >&2
"$root/bin/switchboard" serve
