#!/usr/bin/env bash
# `make run`: the server in development mode, saying what it does at each step and ending
# with a banner of addresses, the key and a command to try. Without DATABASE_URL, a
# throwaway PostgreSQL cluster is started in a temporary directory and removed when the
# server stops.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
step() { printf '==> %s\n' "$*" >&2; }

export APP_ENV=${APP_ENV:-development}
export BOOTSTRAP_API_KEY=${BOOTSTRAP_API_KEY:-sk-svc_development-only-key-00000000000000000000}
private_note="keeps the private-address guard (WEBHOOK_ALLOW_PRIVATE is not 1)"
if [ "$APP_ENV" = development ]; then
	# Development only: local webhook receivers (switchboard webhooks listen) and crawls of
	# local sites. Production keeps the guard unless an operator sets it.
	export WEBHOOK_ALLOW_PRIVATE=${WEBHOOK_ALLOW_PRIVATE:-1}
fi
if [ "${WEBHOOK_ALLOW_PRIVATE:-}" = 1 ]; then
	private_note="WEBHOOK_ALLOW_PRIVATE=1: local and private targets allowed (set by make run in development only)"
fi

addr=${ADDR:-:8080}
port=${addr##*:}
host=${addr%:*}
case "$host" in "" | 0.0.0.0 | "[::]" | "::") host=localhost ;; esac
base="http://$host:$port"
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
	echo "make run: port $port is already in use (another switchboard?). Stop that process, or choose another address: ADDR=:8081 make run" >&2
	exit 1
fi

if [ -z "${DATABASE_URL:-}" ]; then
	tmp=$(mktemp -d /tmp/switchboard-run.XXXXXX)
	chmod 755 "$tmp"
	pgport=$("$here/freeport.sh")
	trap '"$here/pgcluster.sh" stop "$tmp/data"; rm -rf "$tmp"; echo "==> Stopped; the throwaway PostgreSQL is removed" >&2' EXIT
	step "Starting a throwaway PostgreSQL on 127.0.0.1:$pgport (initdb into $tmp; removed on exit; set DATABASE_URL to use your own)"
	"$here/pgcluster.sh" start "$tmp/data" "$pgport"
	export DATABASE_URL="postgres://postgres@127.0.0.1:$pgport/postgres?sslmode=disable"
	db_note="$DATABASE_URL (throwaway)"$'\n'"             operator commands need it: DATABASE_URL='$DATABASE_URL' bin/switchboard keys list --workspace default"
else
	step "Using DATABASE_URL"
	db_note="your DATABASE_URL"
fi

step "Migrating the database"
"$root/bin/switchboard" migrate | sed 's/^/    /' >&2

step "Starting switchboard serve on $addr (APP_ENV=$APP_ENV; its JSON log lines follow)"
"$root/bin/switchboard" serve &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null || true' INT TERM

for _ in $(seq 1 600); do
	kill -0 "$pid" 2>/dev/null || break
	if curl -fsS -o /dev/null "$base/health" 2>/dev/null; then
		vendors=""
		for v in ALPHA BETA GAMMA; do
			k="${v}_API_KEY"
			[ -n "${!k:-}" ] && vendors="$vendors ${v,,}-*"
		done
		if [ -z "$vendors" ]; then
			models="no vendor keys (ALPHA_/BETA_/GAMMA_API_KEY): the local responder answers (it says so and echoes"$'\n'"             your text); its turns are metered like real ones against the development credit"
		else
			models="vendors configured:$vendors"
		fi
		if [ "$APP_ENV" = development ]; then
			auth="/api and /mcp calls without a key act as the development user (owner of \"default\")"
		else
			auth="every call needs the key (APP_ENV=$APP_ENV)"
		fi
		if [ "$APP_ENV" = development ]; then
			dash_note="signed in as the development user, no password"
		else
			dash_note="sign in (users: bin/switchboard users create)"
		fi
		cat >&2 <<BANNER

────────────────────────────────────────────────────────────────────────────────
  Switchboard is running ($APP_ENV)

  API        $base/v1          OpenAI-compatible: any OpenAI client, base URL + key
  MCP        $base/mcp         streamable HTTP (README: MCP clients)
  Dashboard  $base/dashboard/  $dash_note
  Docs       $base/llms.txt   $base/openapi/v1.yaml
             $base/docs/errors   $base/changelog
  Key        $BOOTSTRAP_API_KEY   (workspace "default", owner)
             $auth
  Database   $db_note
  Webhooks   $private_note
             watch them: bin/switchboard webhooks listen
  Models     $models

  Try:
    curl -s $base/v1/responses -H "Authorization: Bearer $BOOTSTRAP_API_KEY" -H 'Content-Type: application/json' -d '{"input":"Hello"}'

  Ctrl-C stops the server (and removes the throwaway database).
────────────────────────────────────────────────────────────────────────────────

BANNER
		break
	fi
	sleep 0.2
done

set +e
wait "$pid"
status=$?
while kill -0 "$pid" 2>/dev/null; do
	wait "$pid"
	status=$?
done
exit "$status"
