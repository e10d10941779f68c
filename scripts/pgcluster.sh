#!/usr/bin/env bash
# Throwaway PostgreSQL cluster for `make run` and `make test`.
#
#   scripts/pgcluster.sh start DIR PORT [fast]   initdb into DIR (if empty) and start on 127.0.0.1:PORT
#   scripts/pgcluster.sh stop DIR                stop the cluster in DIR
#
# PGCLUSTER_OPTS adds server options ("-c name=value ...") when a cluster starts.
#
# Binaries come from PATH or /usr/lib/postgresql/*/bin. PostgreSQL refuses to run as root, so
# as root the cluster runs as the `postgres` user (created if missing). "fast" turns off fsync
# for test clusters: their data is thrown away anyway.
set -euo pipefail

find_bin() {
	if command -v "$1" >/dev/null 2>&1; then command -v "$1"; return; fi
	local b
	b=$(ls -d /usr/lib/postgresql/*/bin/"$1" 2>/dev/null | sort -V | tail -n 1)
	if [ -z "$b" ]; then
		echo "pgcluster: $1 not found; install PostgreSQL (apt-get install postgresql)" >&2
		exit 1
	fi
	echo "$b"
}

as_owner() {
	if [ "$(id -u)" = 0 ]; then
		id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

cmd=${1:?usage: pgcluster.sh start DIR PORT [fast] | stop DIR}
dir=${2:?data directory}
initdb=$(find_bin initdb)
pg_ctl=$(find_bin pg_ctl)

case "$cmd" in
start)
	port=${3:?port}
	mkdir -p "$dir"
	[ "$(id -u)" = 0 ] && { id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres; chown postgres "$dir"; }
	if [ ! -f "$dir/PG_VERSION" ]; then
		as_owner "$initdb" -D "$dir" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >"$dir.initdb.log" 2>&1 ||
			{ cat "$dir.initdb.log" >&2; exit 1; }
	fi
	opts="-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir -c max_connections=400"
	if [ "${4:-}" = fast ]; then
		opts="$opts -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
	fi
	# PGCLUSTER_OPTS: more server options, e.g. the benchmarks' pg_stat_statements.
	opts="$opts ${PGCLUSTER_OPTS:-}"
	as_owner "$pg_ctl" -D "$dir" -l "$dir/server.log" -o "$opts" -w -t 60 start >/dev/null ||
		{ cat "$dir/server.log" >&2; exit 1; }
	;;
stop)
	[ -f "$dir/postmaster.pid" ] && as_owner "$pg_ctl" -D "$dir" -m fast -w stop >/dev/null || true
	;;
*)
	echo "usage: pgcluster.sh start DIR PORT [fast] | stop DIR" >&2
	exit 2
	;;
esac
