#!/usr/bin/env bash
# Switchboard benchmarks (docs/benchmarks.md).
#
#   bench/run.sh [short]   the quick run of `make bench` (under 3 minutes): every scenario, one table
#   bench/run.sh full      the figures of docs/benchmarks.md (about 15 minutes), then the profiles
#   bench/run.sh profile   only the CPU and allocation profiles of scenarios 2 and 3, the
#                          contention (mutex and block) profiles of their parallel forms, and
#                          CPU profiles of the real server process under wrk (PPROF_ADDR)
#   bench/run.sh peers     scenario 7: the Portkey gateway (npm @portkey-ai/gateway, installed into
#                          the temporary directory; BENCH_PORTKEY_VERSION, default 1.15.2) in front
#                          of the same mock, beside Switchboard's chat completions and stored
#                          responses on the same model, one table; 5 s rows after a 1 s warm-up;
#                          a bare Go reverse proxy (`loadtest proxy`) in front of the mock too,
#                          the ceiling of a Go gateway on the machine; each row with the CPU
#                          per request of every process; the mock called directly, the load
#                          generator's own ceiling; the issue 17 targets drawn in
#                          bench/out/<date>-peers/targets.svg, issue 49's items 1 and 2 (ratios
#                          to the bare proxy, stored to ephemeral) in issue49.svg. Its rows come from wrk (Debian's
#                          package, installed if missing: scripts/ensure-wrk.sh), which takes a
#                          third of vegeta's CPU per request from the machine it measures;
#                          BENCH_GEN=vegeta runs them with vegeta, as before the twelfth pass
#   bench/run.sh overhead  scenario 8 (issue 18): two servers of this tree at once, metrics on
#                          (METRICS_ADDR) and tracing off vs both off, ephemeral chat at 64 clients
#                          alternately against each, 7 rounds; the median ratio of req/s
#   bench/run.sh sms       issue 40: two-way SMS under load. Two replicas of this tree on one
#                          database, the fake carrier (bench/cmd/fakecarrier), the model answering
#                          after 2 s; 200 signed inbound webhooks a second for 60 s alternately to
#                          both replicas, replica B SIGKILLed at 30 s; then every accepted message
#                          must have exactly one reply (bench/cmd/smsload). BENCH_SMS_RATE,
#                          BENCH_SMS_DURATION, BENCH_SMS_SENDERS, BENCH_SMS_DELAY (the model's),
#                          BENCH_SMS_KILL_AT (empty: no kill), BENCH_SMS_WAIT (for the replies,
#                          default 5m), BENCH_CHANNEL_WORKERS change it; BENCH_SMS_STATEMENTS=1
#                          loads pg_stat_statements and writes the statements per message
#                          (statements.txt); BENCH_SMS_PPROF=HOST:PORT serves pprof from
#                          replica A; BENCH_SMS_GOMAXPROCS sets both replicas'; results and both replicas' logs in bench/out/<date>-sms/
#   bench/run.sh fanout    issue 49: BENCH_FANOUT_FEEDS (default 10,000) event feeds (GET
#                          /v1/events) open on one server, then BENCH_FANOUT_EVENTS (default 10)
#                          events sent through them one at a time (bench/cmd/fanout): p50, p99
#                          and max from the POST that causes each event to its frame on every
#                          feed, the deliveries missed, the server's memory (VmRSS, VmHWM) and
#                          CPU per delivery; BENCH_FANOUT_PPROF=HOST:PORT serves pprof from it and
#                          saves a CPU profile of the events' phase (cpu.pprof)
#   bench/run.sh agents    issue 49, items 3 and 4: a deployed agent's turn and the webchat embed
#                          route beside stored responses, same model, same run (bench/cmd/agentload):
#                          an agent with business hours, blocked topics, an escalation rule,
#                          labels and search_knowledge_base over BENCH_AGENTS_CHUNKS (default
#                          10,000) chunks of an uploaded corpus, deployed on webchat; the mock's
#                          search=1 model calls the search on every turn. BENCH_AGENTS_ROUNDS
#                          (default 10) alternating rounds of BENCH_AGENTS_ROUND (default 5s) per
#                          route at BENCH_AGENTS_CLIENTS (default 64) clients after
#                          BENCH_AGENTS_WARMUP (3s); medians, spreads and the issue's ratios.
#                          Then the widget's first paint (bench/cmd/widgetpaint, headless
#                          Chromium: scripts/ensure-chromium.sh), BENCH_WIDGET_LOADS (default
#                          20; 0 skips it) loads of a host page with the loader snippet. Each
#                          round gives the server's and PostgreSQL's CPU per request;
#                          BENCH_AGENTS_PPROF=1 saves a CPU profile of each route's first round,
#                          BENCH_AGENTS_STATEMENTS=1 its pg_stat_statements (calls and time per
#                          request), into bench/out/<date>-agents/; BENCH_BASELINE=<ref> runs
#                          that commit's server beside this tree's, routes alternating (base-*)
#   bench/run.sh soak      issue 48, item 2: an open-loop (fixed arrival rate) mixed load for
#                          SOAK_DURATION (default 10m) at SOAK_RPS (default 1000) requests a
#                          second (bench/cmd/soak): ephemeral chat completions, stored responses,
#                          a deployed agent's turns and the webchat embed route, shares per cycle
#                          SOAK_MIX (default ephemeral=60,stored=30,agent=6,embed=4), SOAK_FEEDS
#                          (default 20) event feeds held open, a webhook endpoint subscribed to
#                          SOAK_WEBHOOK_EVENTS (default conversation.created; '*': every event)
#                          (deliveries counted); the server's METRICS_ADDR sampled every
#                          SOAK_SAMPLE (10s): 5xx (must be 0), p50/p99 per route, memory and
#                          goroutines with their slope over the last 80% of the run, the
#                          database's growth per 1,000 turns; samples.csv, seconds.csv,
#                          latency.csv, waits.csv, chart.svg and PostgreSQL's log in
#                          bench/out/<date>-soak/. SOAK_CHUNKS (default 2000): the agent's
#                          knowledge; SOAK_PPROF=HOST:PORT serves the server's pprof there
#   bench/run.sh outage    issue 48, item 1: the soak's load at OUTAGE_RPS (default 200) for
#                          OUTAGE_DURATION (default 60s), PostgreSQL stopped at OUTAGE_AT (20s)
#                          for OUTAGE_FOR (20s) (scripts/pgcluster.sh stop, start): the outcomes
#                          per second (503 database_unavailable with Retry-After, other 5xx: must
#                          be 0, transport errors), the time from PostgreSQL's return to the first
#                          2xx and to the 2xx rate at its target, goroutines and connections before
#                          and after, every acknowledged stored response and agent turn checked in
#                          the database, every acknowledged background response completed;
#                          OUTAGE_MIX (default ephemeral=57,stored=28,agent=6,embed=4,background=5);
#                          results in bench/out/<date>-outage/
#   bench/run.sh knowledge issue 49: search_knowledge_base's query on an agent holding 10,000 and
#                          100,000 chunks (store/knowledgebench_test.go; KNOWLEDGE_BENCH_SIZES
#                          changes the sizes): this tree's search beside the previous one on the
#                          schema before the newest knowledge migration, alternately, right after
#                          ingestion before any ANALYZE (KNOWLEDGE_BENCH_FRESH searches, 100) and
#                          after VACUUM (500): p50, p99, the backend's CPU and pg_stat_statements
#                          per search, and the answers' quality against the full ranking;
#                          KNOWLEDGE_BENCH_STATEMENTS=1 lists the statements,
#                          KNOWLEDGE_BENCH_CANDIDATES=N adds the tiers with N candidates ranked,
#                          on a database of its own
#
# Builds the server, the mock vendor and the load generator, starts a throwaway PostgreSQL
# (synchronous_commit on, fsync on: the production settings), the mock and the server, all on
# 127.0.0.1, runs the scenarios and stops everything on exit. full and profile keep their
# results, the server log and the profiles in bench/out/<date>/ (BENCH_OUT overrides).
# BENCH_ONLY=2,3 runs only those scenarios (and, with full, skips the profiles).
# BENCH_DB_PARAMS=pool_max_conns=4 appends parameters to the server's DATABASE_URL (experiments).
# BENCH_PG_OPTS="-c autovacuum_naptime=1s" adds server options to the benchmark's PostgreSQL
# (experiments: docs/benchmarks.md, "2026-12-01: a quiet machine, and plans made while the
# tables were empty").
# BENCH_BASELINE=<git ref> also builds the server of that commit and runs the same plan against
# it first, each server on a database of its own in the same cluster, so that a change is
# judged against a baseline measured in the same run: two tables, baseline first (run first
# too, unless BENCH_BASELINE_LAST=1).
#
# BENCH_SERVER_REF=<git ref> builds "this tree's" server from that commit instead of the working
# tree (the benchmark kit still comes from the working tree): figures of a committed server
# while the tree is being edited. BENCH_SERVER_BIN=<file> uses that binary instead (experiments).
#
# BENCH_HEAD_ENV="METRICS=1" starts this tree's server with METRICS_ADDR set (metrics on) while
# the baseline runs without: with BENCH_BASELINE=HEAD it measures the cost of metrics alone.
# Other words of BENCH_HEAD_ENV are passed to this tree's server as environment (NAME=value).
#
# Nothing else is installed: it needs Go and the PostgreSQL server binaries, like `make test`.
set -euo pipefail
mode=${1:-short}
case "$mode" in short | full | profile | peers | overhead | sms | knowledge | fanout | agents | soak | outage) ;; *)
	echo "usage: bench/run.sh [short|full|profile|peers|overhead|sms|knowledge|fanout|agents|soak|outage]" >&2
	exit 2
	;;
esac
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
scripts=$root/scripts
cd "$root"

if [ "$mode" = knowledge ]; then
	# pg_stat_statements gives each search's statements and execution time (a cluster of the
	# caller's, TEST_DATABASE_URL, reports them only if it loads the library).
	export PGCLUSTER_OPTS="${PGCLUSTER_OPTS:-} -c shared_preload_libraries=pg_stat_statements"
	exec "$scripts/with-test-db.sh" go test -tags knowledgebench -count=1 -timeout 60m -run TestMeasureKnowledgeSearch -v ./store/
fi

load_at_start=$(cut -d' ' -f1-3 /proc/loadavg)
tmp=$(mktemp -d /tmp/switchboard-bench.XXXXXX)
chmod 755 "$tmp"
out=""
if [ "$mode" != short ]; then
	out=${BENCH_OUT:-$here/out/$(date -u +%Y%m%dT%H%M%SZ)-$mode}
	mkdir -p "$out"
fi
pids=()
cleanup() {
	local status=$?
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	"$scripts/pgcluster.sh" stop "$tmp/data" >/dev/null 2>&1 || true
	if [ -n "$out" ] && [ -f "$tmp/server.log" ]; then
		gzip -c "$tmp/server.log" >"$out/server.log.gz" 2>/dev/null || true
	fi
	rm -rf "$tmp"
	exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { echo "bench: $*" >&2; }

# port prints a port nothing listens on, outside the kernel's ephemeral range
# (scripts/freeport.sh).
port() {
	"$scripts/freeport.sh"
}

say "building (go build) ..."
mkdir -p "$tmp/bin"
if [ -n "${BENCH_SERVER_BIN:-}" ]; then
	say "using the server binary $BENCH_SERVER_BIN (BENCH_SERVER_BIN) ..."
	cp "$BENCH_SERVER_BIN" "$tmp/bin/switchboard"
elif [ -n "${BENCH_SERVER_REF:-}" ]; then
	say "building the server of $BENCH_SERVER_REF (BENCH_SERVER_REF) instead of the working tree's ..."
	git worktree add -q --detach "$tmp/server-src" "$BENCH_SERVER_REF"
	(cd "$tmp/server-src" && go build -o "$tmp/bin/switchboard" ./cmd/switchboard) ||
		{ git worktree remove --force "$tmp/server-src"; exit 1; }
	git worktree remove --force "$tmp/server-src"
else
	go build -o "$tmp/bin/switchboard" ./cmd/switchboard
fi
if [ -n "${BENCH_BASELINE:-}" ]; then
	say "building the baseline server of $BENCH_BASELINE ..."
	git worktree add -q --detach "$tmp/baseline-src" "$BENCH_BASELINE"
	(cd "$tmp/baseline-src" && go build -o "$tmp/bin/switchboard-baseline" ./cmd/switchboard)
	git worktree remove --force "$tmp/baseline-src"
fi
go build -o "$tmp/bin/mockllm" ./bench/mockllm
go build -o "$tmp/bin/loadtest" ./bench/cmd/loadtest
if [ "$mode" = sms ]; then
	go build -o "$tmp/bin/fakecarrier" ./bench/cmd/fakecarrier
	go build -o "$tmp/bin/smsload" ./bench/cmd/smsload
fi
if [ "$mode" = fanout ]; then
	go build -o "$tmp/bin/fanout" ./bench/cmd/fanout
fi
if [ "$mode" = agents ]; then
	go build -o "$tmp/bin/agentload" ./bench/cmd/agentload
	go build -o "$tmp/bin/widgetpaint" ./bench/cmd/widgetpaint
fi
if [ "$mode" = soak ] || [ "$mode" = outage ]; then
	go build -o "$tmp/bin/soak" ./bench/cmd/soak
fi
if [ "$mode" != short ] && [ "$mode" != sms ] && [ "$mode" != fanout ] && [ "$mode" != agents ] && [ "$mode" != soak ] && [ "$mode" != outage ]; then
	go test -c -o "$tmp/bin/bench.test" ./bench
fi

for attempt in 1 2 3; do
	pgport=$(port)
	say "starting PostgreSQL on 127.0.0.1:$pgport (synchronous_commit on) ..."
	statements_opts=""
	if { [ "$mode" = sms ] && [ -n "${BENCH_SMS_STATEMENTS:-}" ]; } || { [ "$mode" = agents ] && [ -n "${BENCH_AGENTS_STATEMENTS:-}" ]; }; then
		statements_opts="-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all -c pg_stat_statements.max=5000"
	fi
	if PGCLUSTER_OPTS="$statements_opts ${BENCH_PG_OPTS:-}" "$scripts/pgcluster.sh" start "$tmp/data" "$pgport"; then break; fi
	[ "$attempt" -lt 3 ] || exit 1
done
admin_url="postgres://postgres@127.0.0.1:$pgport/postgres?sslmode=disable"

# listening NAME: waits up to 10 s for $tmp/NAME.addr, written by a process started with
# -addr-file once it listens, and prints its URL; on a timeout, NAME's log and exit.
listening() {
	for _ in $(seq 1 100); do
		[ -s "$tmp/$1.addr" ] && break
		sleep 0.1
	done
	[ -s "$tmp/$1.addr" ] || { cat "$tmp/$1.log" >&2; say "$1 did not start"; exit 1; }
	echo "http://$(cat "$tmp/$1.addr")"
}

"$tmp/bin/mockllm" -addr 127.0.0.1:0 -addr-file "$tmp/mock.addr" -capture "$tmp/capture" 2>"$tmp/mock.log" &
mockpid=$!
pids+=($mockpid)
mock=$(listening mock)

peer=""
if [ "$mode" = peers ]; then
	gen=${BENCH_GEN:-wrk}
	if [ "$gen" = wrk ]; then
		scripts/ensure-wrk.sh
		command -v wrk >/dev/null 2>&1 || { say "wrk is missing (above); BENCH_GEN=vegeta runs without it"; exit 1; }
	fi
	version=${BENCH_PORTKEY_VERSION:-1.15.2}
	say "installing the Portkey gateway $version from npm into $tmp/portkey ..."
	npm install --prefix "$tmp/portkey" --no-audit --no-fund --loglevel=error "@portkey-ai/gateway@$version" >"$tmp/npm.log" 2>&1 ||
		{ cat "$tmp/npm.log" >&2; say "npm install failed"; exit 1; }
	pkport=$(port)
	NODE_ENV=production node "$tmp/portkey/node_modules/@portkey-ai/gateway/build/start-server.js" --port="$pkport" --headless >"$tmp/portkey.log" 2>&1 &
	peerpid=$!
	pids+=($peerpid)
	for _ in $(seq 1 100); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$pkport") 2>/dev/null; then break; fi
		sleep 0.1
	done
	(exec 3<>"/dev/tcp/127.0.0.1/$pkport") 2>/dev/null || { cat "$tmp/portkey.log" >&2; say "Portkey did not start"; exit 1; }
	peer="http://127.0.0.1:$pkport"
	say "Portkey $version on $peer, pointed at the mock per request (x-portkey-custom-host)"
	# The bare Go proxy: what a Go process that only forwards reaches on this machine.
	"$tmp/bin/loadtest" proxy -upstream "$mock" -addr-file "$tmp/bare.addr" 2>"$tmp/bare.log" &
	barepid=$!
	pids+=($barepid)
	bare=$(listening bare)
fi

machine() {
	local cpu mem
	cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
	mem=$(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)
	echo "machine: $(nproc) CPUs ($cpu), $mem; $(go version | cut -d' ' -f3-); PostgreSQL $("$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)/postgres" --version 2>/dev/null | awk '{print $3}' || echo '?'); load average $load_at_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) now; $(date -u '+%Y-%m-%d %H:%M UTC')"
}

# profile: the in-process Go benchmarks of scenarios 2 and 3 under pprof.
profile() {
	say "profiles: in-process benchmarks of scenarios 2 and 3 (go test -bench, pprof) ..."
	local dir=$1 benchtime=${2:-10s}
	export BENCH_DATABASE_URL=$admin_url BENCH_MOCK_URL=$mock
	cp "$tmp/bin/bench.test" "$dir/bench.test"
	(
		cd "$dir"
		./bench.test -test.run '^$' -test.bench '^Benchmark(AuthOnly|VendorCall|CommitEphemeral|EphemeralChatParallel|EphemeralChatOpenAIParallel|StoredResponseParallel)$' \
			-test.benchtime 3s | tee decomposition.txt
		for b in EphemeralChat StoredResponse; do
			./bench.test -test.run '^$' -test.bench "^Benchmark$b\$" -test.benchtime "$benchtime" \
				-test.cpuprofile "cpu-$b.pprof" -test.memprofile "mem-$b.pprof" | tee "bench-$b.txt"
			go tool pprof -top -nodecount=40 bench.test "cpu-$b.pprof" >"cpu-$b-top.txt" 2>/dev/null
			go tool pprof -top -cum -nodecount=80 bench.test "cpu-$b.pprof" >"cpu-$b-cum.txt" 2>/dev/null
			go tool pprof -sample_index=alloc_space -top -nodecount=40 bench.test "mem-$b.pprof" >"alloc-$b-top.txt" 2>/dev/null
			go tool pprof -sample_index=alloc_space -top -cum -nodecount=80 bench.test "mem-$b.pprof" >"alloc-$b-cum.txt" 2>/dev/null
		done
		# Where the 64 goroutines of a parallel run wait: at locks (mutex) and on channels,
		# selects and locks (block), each with its stacks. On a saturated machine a wait here
		# is mostly a wait for the CPU by another name (docs/benchmarks.md, fifteenth pass).
		for b in EphemeralChatOpenAIParallel StoredResponseParallel; do
			./bench.test -test.run '^$' -test.bench "^Benchmark$b\$" -test.benchtime 4s \
				-test.mutexprofile "mutex-$b.pprof" -test.blockprofile "block-$b.pprof" | tee "bench-$b.txt"
			go tool pprof -traces bench.test "mutex-$b.pprof" >"mutex-$b-traces.txt" 2>/dev/null
			go tool pprof -traces bench.test "block-$b.pprof" >"block-$b-traces.txt" 2>/dev/null
		done
	)
	say "profiles in $dir (go tool pprof -http=: $dir/bench.test $dir/cpu-EphemeralChat.pprof)"
}

"$tmp/bin/loadtest" models-file >"$tmp/models.yaml"
# start_server BINARY DATABASE_URL [NAME=value ...]
start_server() {
	local bin=$1 db=$2
	shift 2
	local extra=()
	for word in "$@"; do
		if [ "$word" = METRICS=1 ]; then extra+=("METRICS_ADDR=127.0.0.1:$(port)"); else extra+=("$word"); fi
	done
	srvport=$(port)
	say "starting $(basename "$bin") on 127.0.0.1:$srvport, vendors at $mock ..."
	env DATABASE_URL="$db${BENCH_DB_PARAMS:+&$BENCH_DB_PARAMS}" ADDR="127.0.0.1:$srvport" APP_ENV=production \
		BOOTSTRAP_API_KEY=sk-svc_benchmark-bootstrap-key-000000000000000 \
		RATE_LIMIT_KEY_RPM=100000000 RATE_LIMIT_WORKSPACE_RPM=100000000 WEBHOOK_ALLOW_PRIVATE=1 \
		SECRETS_KEY="$(head -c 32 /dev/urandom | base64)" \
		WORKSPACE_STARTING_CREDIT_USD=1000000 MODELS_FILE="$tmp/models.yaml" \
		ALPHA_API_KEY=mock ALPHA_BASE_URL="$mock" ALPHA_PROTOCOL=anthropic \
		BETA_API_KEY=mock BETA_BASE_URL="$mock/v1" BETA_PROTOCOL=openai \
		GAMMA_API_KEY=mock GAMMA_BASE_URL="$mock" GAMMA_PROTOCOL=gemini \
		${extra[@]+"${extra[@]}"} "$bin" serve 2>>"$tmp/server.log" &
	srvpid=$!
	pids+=($srvpid)
	for _ in $(seq 1 300); do
		if ! kill -0 "$srvpid" 2>/dev/null; then return 1; fi
		if (exec 3<>"/dev/tcp/127.0.0.1/$srvport") 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	return 1
}
# run_plan NAME BINARY: the plan against one server, on a database of its own; the table goes
# to $tmp/table-NAME.txt.
run_plan() {
	local name=$1 bin=$2 db_url extra=()
	if [ "$name" = head ] && [ -n "${BENCH_HEAD_ENV:-}" ]; then
		read -r -a extra <<<"$BENCH_HEAD_ENV"
	fi
	psql_admin -c "CREATE DATABASE bench_$name" >/dev/null
	db_url="postgres://postgres@127.0.0.1:$pgport/bench_$name?sslmode=disable"
	for attempt in 1 2 3; do
		if start_server "$bin" "$db_url" ${extra[@]+"${extra[@]}"}; then break; fi
		tail -n 5 "$tmp/server.log" >&2
		kill "$srvpid" 2>/dev/null || true
		[ "$attempt" -lt 3 ] || { say "the server did not start"; exit 1; }
	done
	say "running the $mode plan against $name (progress below, the table at the end) ..."
	local plan=$mode
	[ "$mode" != peers ] || plan=peers # 5 s rows (loadtest's peers plan)
	local args=(run -plan "$plan" -server "http://127.0.0.1:$srvport" -mock "$mock" -capture "$tmp/capture" -database-url "$db_url" -switchboard "$bin")
	args+=(-json "$tmp/results-$name.json")
	if [ -n "$out" ]; then
		args+=(-markdown "$out/results-$name.md")
	fi
	if [ -n "$peer" ]; then
		# CPU per request of each process, children included (PostgreSQL's backends).
		local cpu="server=$srvpid,postgres=$(head -n1 "$tmp/data/postmaster.pid"),mock=$mockpid,portkey=$peerpid,bare-proxy=$barepid"
		args+=(-only 7 -peer "$peer" -bare "$bare" -cpu "$cpu" -gen "$gen")
	elif [ -n "${BENCH_ONLY:-}" ]; then
		args+=(-only "$BENCH_ONLY")
	fi
	"$tmp/bin/loadtest" "${args[@]}" >"$tmp/table-$name.txt"
	kill "$srvpid" 2>/dev/null || true
	wait "$srvpid" 2>/dev/null || true
}
psql_admin() {
	local bin
	bin=$(command -v psql || ls /usr/lib/postgresql/*/bin/psql 2>/dev/null | sort -V | tail -n1)
	"$bin" "$admin_url" -v ON_ERROR_STOP=1 "$@"
}

# serve_profile DIR SECONDS: CPU profiles of the real process (`switchboard serve` with
# PPROF_ADDR) under wrk at 64 clients, an ephemeral chat completion then a stored response.
# Unlike the in-process benchmarks, which hand the server httptest requests, these include
# net/http's serving path and the client's socket (docs/benchmarks.md, sixteenth pass).
serve_profile() {
	local dir=$1 secs=${2:-10} pp row
	scripts/ensure-wrk.sh
	command -v wrk >/dev/null 2>&1 || { say "wrk is missing (above): no profile of the real process"; return 0; }
	psql_admin -c "CREATE DATABASE bench_profile" >/dev/null
	pp=$(port)
	start_server "$tmp/bin/switchboard" "postgres://postgres@127.0.0.1:$pgport/bench_profile?sslmode=disable" "PPROF_ADDR=127.0.0.1:$pp" ||
		{ tail -n 5 "$tmp/server.log" >&2; exit 1; }
	for row in "ServeChat /v1/chat/completions {\"model\":\"beta-5.4\",\"messages\":[{\"role\":\"user\",\"content\":\"Say hello.\"}]}" \
		"ServeStored /v1/responses {\"model\":\"beta-5.4\",\"input\":\"Say hello.\"}"; do
		read -r name path body <<<"$row"
		printf 'wrk.method = "POST"\nwrk.body = %s\nwrk.headers["Content-Type"] = "application/json"\nwrk.headers["Authorization"] = "Bearer sk-svc_benchmark-bootstrap-key-000000000000000"\n' \
			"'$body'" >"$tmp/$name.lua"
		say "profiles: switchboard serve, $name at 64 clients, ${secs}s under pprof ..."
		wrk -t2 -c64 -d2s -s "$tmp/$name.lua" "http://127.0.0.1:$srvport$path" >/dev/null
		go tool pprof -proto -seconds "$secs" -output "$dir/cpu-$name.pprof" "http://127.0.0.1:$pp/debug/pprof/profile" 2>/dev/null &
		local fetch=$!
		wrk -t2 -c64 -d"$((secs + 2))s" --latency -s "$tmp/$name.lua" "http://127.0.0.1:$srvport$path" | tee "$dir/wrk-$name.txt"
		wait "$fetch" || { say "no profile from PPROF_ADDR"; exit 1; }
		go tool pprof -top -nodecount=40 "$dir/cpu-$name.pprof" >"$dir/cpu-$name-top.txt" 2>/dev/null
		go tool pprof -top -cum -nodecount=80 "$dir/cpu-$name.pprof" >"$dir/cpu-$name-cum.txt" 2>/dev/null
	done
	kill "$srvpid" 2>/dev/null || true
	wait "$srvpid" 2>/dev/null || true
}

if [ "$mode" = profile ]; then
	machine | tee "$out/machine.txt"
	profile "$out" 10s
	serve_profile "$out" 10
	exit 0
fi

# sms: issue 40 (docs/benchmarks.md, "Two-way SMS under load").
if [ "$mode" = sms ]; then
	delay=${BENCH_SMS_DELAY:-2s}
	# The agent's model answers after $delay with "re: " and the message it answers, which is
	# how smsload tells which message each reply SMS answers.
	printf 'beta-5.4-mini:\n  upstream: "paced-sms@ttft=%s,chunks=1,echo=1"\n' "$delay" >>"$tmp/models.yaml"
	number=+14155550100
	"$tmp/bin/fakecarrier" -number "$number" -addr-file "$tmp/carrier.addr" -stats-addr-file "$tmp/carrier-stats.addr" 2>"$tmp/carrier.log" &
	carrierpid=$!
	pids+=($carrierpid)
	carrier=$(listening carrier)
	carrier_stats=$(listening carrier-stats)
	psql_admin -c "CREATE DATABASE bench_sms" >/dev/null
	db_url="postgres://postgres@127.0.0.1:$pgport/bench_sms?sslmode=disable"
	psql_sms() { admin_url=$db_url psql_admin "$@"; }
	env DATABASE_URL="$db_url" "$tmp/bin/switchboard" migrate >"$tmp/migrate.log" 2>&1 || { cat "$tmp/migrate.log" >&2; exit 1; }
	if [ -n "${BENCH_SMS_STATEMENTS:-}" ]; then
		psql_sms -c "CREATE EXTENSION pg_stat_statements" >/dev/null
	fi
	key=sk-svc_benchmark-bootstrap-key-000000000000000
	secrets_key=$(head -c 32 /dev/urandom | base64)
	port_a=$(port)
	port_b=$(port)
	while [ "$port_b" = "$port_a" ]; do port_b=$(port); done
	# replica NAME PORT: a replica of this tree; both share the database, SECRETS_KEY and
	# PUBLIC_BASE_URL (replica A's address: the carrier signs over the inbound URL).
	replica() {
		env DATABASE_URL="$db_url${BENCH_DB_PARAMS:+&$BENCH_DB_PARAMS}" ADDR="127.0.0.1:$2" APP_ENV=production \
			PUBLIC_BASE_URL="http://127.0.0.1:$port_a" BOOTSTRAP_API_KEY=$key SECRETS_KEY="$secrets_key" \
			RATE_LIMIT_KEY_RPM=100000000 RATE_LIMIT_WORKSPACE_RPM=100000000 WEBHOOK_ALLOW_PRIVATE=1 \
			MODELS_FILE="$tmp/models.yaml" BETA_API_KEY=mock BETA_BASE_URL="$mock/v1" BETA_PROTOCOL=openai \
			TWILIO_ACCOUNT_SID=ACtest0000000000000000000000000000 TWILIO_AUTH_TOKEN=testtoken TWILIO_BASE_URL="$carrier" \
			${BENCH_CHANNEL_WORKERS:+CHANNEL_WORKERS=$BENCH_CHANNEL_WORKERS} ${BENCH_SMS_GOMAXPROCS:+GOMAXPROCS=$BENCH_SMS_GOMAXPROCS} \
			$([ "$1" = a ] && [ -n "${BENCH_SMS_PPROF:-}" ] && echo "PPROF_ADDR=$BENCH_SMS_PPROF") \
			"$tmp/bin/switchboard" serve 2>"$tmp/server-$1.log" &
		srvpid=$!
		pids+=($srvpid)
		for _ in $(seq 1 300); do
			kill -0 "$srvpid" 2>/dev/null || { tail -n 5 "$tmp/server-$1.log" >&2; say "replica $1 exited"; exit 1; }
			if (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null; then return 0; fi
			sleep 0.1
		done
		say "replica $1 did not start"
		exit 1
	}
	say "starting replica A on 127.0.0.1:$port_a and replica B on 127.0.0.1:$port_b, carrier at $carrier, model delay $delay ..."
	replica a "$port_a"
	pid_a=$srvpid
	replica b "$port_b"
	pid_b=$srvpid
	disown "$pid_b" # killed on purpose: no "Killed" notice from the shell (cleanup still kills it)
	env DATABASE_URL="$db_url" SECRETS_KEY="$secrets_key" "$tmp/bin/switchboard" workspaces credit default --usd 100000 >/dev/null
	kill_at=${BENCH_SMS_KILL_AT-30s}
	args=(-a "http://127.0.0.1:$port_a" -b "http://127.0.0.1:$port_b" -key "$key" -number "$number"
		-carrier "$carrier_stats" -database-url "$db_url" -rate "${BENCH_SMS_RATE:-200}"
		-duration "${BENCH_SMS_DURATION:-60s}" -senders "${BENCH_SMS_SENDERS:-2000}" -wait "${BENCH_SMS_WAIT:-5m}" -json "$out/results.json")
	[ -z "$kill_at" ] || args+=(-kill-pid "$pid_b" -kill-at "$kill_at")
	# CPU of each process during the load, beside the rest of the machine's (a shared machine).
	args+=(-cpu "a=$pid_a,b=$pid_b,postgres=$(head -n1 "$tmp/data/postmaster.pid"),mock=$mockpid,carrier=$carrierpid")
	status=0
	"$tmp/bin/smsload" "${args[@]}" >"$tmp/table-sms.txt" || status=$?
	if [ -n "${BENCH_SMS_STATEMENTS:-}" ]; then
		# Every statement the run's processes sent, per inbound message (BENCH_SMS_STATEMENTS=1):
		# the setup's few are included; run after the load, once every reply is sent.
		psql_sms -At -c "SELECT count(*) FROM channel_messages WHERE direction = 'inbound'" >"$tmp/messages.txt"
		psql_sms -c "SELECT round(sum(s.calls)::numeric / m.n, 2) AS statements_per_message,
				round((sum(s.calls) FILTER (WHERE s.query ~* '^\s*(begin|commit)'))::numeric / m.n, 2) AS begin_commit_per_message,
				round(sum(s.total_exec_time)::numeric / m.n, 3) AS exec_ms_per_message
			FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid, (SELECT $(cat "$tmp/messages.txt")::numeric AS n) m
			WHERE d.datname = 'bench_sms' GROUP BY m.n" >"$out/statements.txt"
		psql_sms -c "SELECT round(s.calls::numeric / $(cat "$tmp/messages.txt"), 3) AS per_message,
				round(s.total_exec_time::numeric / $(cat "$tmp/messages.txt"), 4) AS ms_per_message, left(regexp_replace(s.query, '\s+', ' ', 'g'), 160) AS query
			FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = 'bench_sms'
			ORDER BY s.calls DESC LIMIT 60" >>"$out/statements.txt"
		say "statements per message in $out/statements.txt"
	fi
	rescues=$(grep -c 'requeued the running jobs of a replica that died' "$tmp/server-a.log" || true)
	echo
	machine | tee "$out/machine.txt"
	if [ -n "${BENCH_SERVER_BIN:-}" ]; then
		server_rev="$BENCH_SERVER_BIN"
	elif [ -n "${BENCH_SERVER_REF:-}" ]; then
		server_rev="$BENCH_SERVER_REF ($(git rev-parse --short "$BENCH_SERVER_REF"))"
	else
		server_rev="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . 2>/dev/null || echo ' with uncommitted changes')"
	fi
	echo "plan: sms (issue 40); server: $server_rev; model delay $delay; CHANNEL_WORKERS ${BENCH_CHANNEL_WORKERS:-default}; replica A logged $rescues rescue(s)"
	tee "$out/table.txt" <"$tmp/table-sms.txt"
	kill "$pid_a" 2>/dev/null || true
	wait "$pid_a" 2>/dev/null || true
	for name in a b; do gzip -c "$tmp/server-$name.log" >"$out/server-$name.log.gz" 2>/dev/null || true; done
	cp "$tmp/carrier.log" "$out/" 2>/dev/null || true
	say "results in $out"
	exit $status
fi

# fanout: issue 49, item 5 (docs/benchmarks.md, "Event fan-out").
if [ "$mode" = fanout ]; then
	psql_admin -c "CREATE DATABASE bench_fanout" >/dev/null
	profile_env=()
	[ -z "${BENCH_FANOUT_PPROF:-}" ] || profile_env=("PPROF_ADDR=$BENCH_FANOUT_PPROF")
	start_server "$tmp/bin/switchboard" "postgres://postgres@127.0.0.1:$pgport/bench_fanout?sslmode=disable" ${profile_env[@]+"${profile_env[@]}"} ||
		{ tail -n 5 "$tmp/server.log" >&2; exit 1; }
	say "fanout: ${BENCH_FANOUT_FEEDS:-10000} feeds on 127.0.0.1:$srvport (open files: $(ulimit -n)) ..."
	status=0
	"$tmp/bin/fanout" -server "http://127.0.0.1:$srvport" -key sk-svc_benchmark-bootstrap-key-000000000000000 \
		-feeds "${BENCH_FANOUT_FEEDS:-10000}" -events "${BENCH_FANOUT_EVENTS:-10}" -pid "$srvpid" \
		${BENCH_FANOUT_PPROF:+-pprof "$BENCH_FANOUT_PPROF" -profile "$out/cpu.pprof"} >"$tmp/table-fanout.txt" || status=$?
	machine | tee "$out/machine.txt"
	tee "$out/table.txt" <"$tmp/table-fanout.txt"
	exit $status
fi

# agents: issue 49, items 3 and 4 (docs/benchmarks.md, "Agent turns and webchat").
if [ "$mode" = agents ]; then
	# The agent's model (and the stored responses') calls search_knowledge_base when offered.
	printf 'beta-5.4-mini:\n  upstream: "agent@chunks=5,search=1"\n' >>"$tmp/models.yaml"
	agent_args=()
	# start_agents_server NAME BINARY: a server on a database of its own, with the CPU (server, the mock,
	# PostgreSQL), profile and statements options of agentload for it in agent_args.
	start_agents_server() {
		local name=$1 bin=$2 db flag=""
		[ "$name" = head ] || flag=baseline-
		psql_admin -c "CREATE DATABASE bench_agents_$name" >/dev/null
		db="postgres://postgres@127.0.0.1:$pgport/bench_agents_$name?sslmode=disable"
		local env=(WEBCHAT_VISITOR_RPM=100000000 WEBCHAT_DEPLOYMENT_RPM=100000000)
		local pprof=""
		if [ -n "${BENCH_AGENTS_PPROF:-}" ]; then
			pprof=127.0.0.1:$(port)
			env+=("PPROF_ADDR=$pprof")
		fi
		start_server "$bin" "$db" "${env[@]}" || { tail -n 5 "$tmp/server.log" >&2; exit 1; }
		[ "$name" = head ] && agent_args+=(-server "http://127.0.0.1:$srvport") || agent_args+=(-baseline "http://127.0.0.1:$srvport")
		agent_args+=("-${flag}cpu" "server=$srvpid,postgres=$(head -n1 "$tmp/data/postmaster.pid"),mock=$mockpid")
		[ -z "$pprof" ] || agent_args+=("-${flag}pprof" "$pprof")
		[ -z "${BENCH_AGENTS_STATEMENTS:-}" ] || agent_args+=("-${flag}database-url" "$db")
		[ "$name" != head ] || head_db=$db
	}
	start_agents_server head "$tmp/bin/switchboard"
	[ -z "${BENCH_BASELINE:-}" ] || start_agents_server baseline "$tmp/bin/switchboard-baseline"
	say "agents: agent turns and webchat on ${agent_args[1]}${BENCH_BASELINE:+, and the baseline ($BENCH_BASELINE) beside it} ..."
	status=0
	"$tmp/bin/agentload" "${agent_args[@]}" -key sk-svc_benchmark-bootstrap-key-000000000000000 -mock "$mock" -out "$out" \
		-chunks "${BENCH_AGENTS_CHUNKS:-10000}" -clients "${BENCH_AGENTS_CLIENTS:-64}" -rounds "${BENCH_AGENTS_ROUNDS:-10}" \
		-round "${BENCH_AGENTS_ROUND:-5s}" -warmup "${BENCH_AGENTS_WARMUP:-3s}" -deployment-file "$tmp/deployment" >"$tmp/table-agents.txt" || status=$?
	echo "knowledge chunks in the database: $(admin_url=$head_db psql_admin -Atc 'SELECT count(*) FROM knowledge_chunks' 2>/dev/null || echo '?')" >>"$tmp/table-agents.txt"
	if [ -s "$tmp/deployment" ] && [ "${BENCH_WIDGET_LOADS:-20}" != 0 ]; then
		scripts/ensure-chromium.sh >/dev/null 2>&1 || true
		say "widget: first paint of the launcher on a host page (headless Chromium) ..."
		"$tmp/bin/widgetpaint" -server "${agent_args[1]}" -deployment "$(cat "$tmp/deployment")" \
			-loads "${BENCH_WIDGET_LOADS:-20}" >>"$tmp/table-agents.txt" || status=$?
	fi
	for f in "$out"/cpu-*.pprof; do
		[ -f "$f" ] || continue
		go tool pprof -top -cum -nodecount=80 "$tmp/bin/switchboard" "$f" >"${f%.pprof}-cum.txt" 2>/dev/null || true
	done
	echo
	machine | tee "$out/machine.txt"
	echo "plan: agents (issue 49, items 3 and 4); server: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . 2>/dev/null || echo ' with uncommitted changes')${BENCH_BASELINE:+; baseline (base-*): $BENCH_BASELINE}"
	tee "$out/table.txt" <"$tmp/table-agents.txt"
	exit $status
fi

# soak and outage: issue 48, items 1 and 2 (docs/benchmarks.md, "Soak" and "PostgreSQL outage").
if [ "$mode" = soak ] || [ "$mode" = outage ]; then
	# The agent's model calls search_knowledge_base when offered (as in the agents scenario).
	printf 'beta-5.4-mini:\n  upstream: "agent@chunks=5,search=1"\n' >>"$tmp/models.yaml"
	psql_admin -c "CREATE DATABASE bench_$mode" >/dev/null
	db_url="postgres://postgres@127.0.0.1:$pgport/bench_$mode?sslmode=disable"
	metrics_port=$(port)
	start_server "$tmp/bin/switchboard" "$db_url" "METRICS_ADDR=127.0.0.1:$metrics_port" \
		WEBCHAT_VISITOR_RPM=100000000 WEBCHAT_DEPLOYMENT_RPM=100000000 ${SOAK_PPROF:+"PPROF_ADDR=$SOAK_PPROF"} ||
		{ tail -n 5 "$tmp/server.log" >&2; exit 1; }
	args=(-mode "$mode" -server "http://127.0.0.1:$srvport" -key sk-svc_benchmark-bootstrap-key-000000000000000
		-metrics "http://127.0.0.1:$metrics_port" -database-url "$db_url" -out "$out"
		-feeds "${SOAK_FEEDS:-20}"
		-chunks "${SOAK_CHUNKS:-2000}" -sample "${SOAK_SAMPLE:-10s}")
	if [ "$mode" = soak ]; then
		args+=(-rate "${SOAK_RPS:-1000}" -duration "${SOAK_DURATION:-10m}" -mix "${SOAK_MIX:-ephemeral=60,stored=30,agent=6,embed=4}"
			-webhook-events "${SOAK_WEBHOOK_EVENTS:-conversation.created}")
	else
		# The outage's mix adds background responses: each acknowledged one must complete.
		args+=(-mix "${OUTAGE_MIX:-ephemeral=57,stored=28,agent=6,embed=4,background=5}" -rate "${OUTAGE_RPS:-200}" -duration "${OUTAGE_DURATION:-60s}" -outage-at "${OUTAGE_AT:-20s}"
			-outage-for "${OUTAGE_FOR:-20s}" -pgcluster "$scripts/pgcluster.sh" -pgdata "$tmp/data" -pgport "$pgport")
	fi
	say "$mode: the load on 127.0.0.1:$srvport (metrics on :$metrics_port) ..."
	status=0
	"$tmp/bin/soak" "${args[@]}" >"$tmp/table-$mode.txt" || status=$?
	panics=$(grep -c '^panic\|goroutine .* \[running\]' "$tmp/server.log" || true)
	gzip -c "$tmp/data/server.log" >"$out/postgres.log.gz" 2>/dev/null || true
	echo
	machine | tee "$out/machine.txt"
	echo "plan: $mode (issue 48); server: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . 2>/dev/null || echo ' with uncommitted changes'); panics in the server log: $panics"
	tee "$out/table.txt" <"$tmp/table-$mode.txt"
	say "results in $out (table.txt, samples.csv, seconds.csv, waits.csv, chart.svg, postgres.log.gz)"
	exit $status
fi

if [ "$mode" = overhead ]; then
	for name in on off; do psql_admin -c "CREATE DATABASE bench_$name" >/dev/null; done
	url_on="postgres://postgres@127.0.0.1:$pgport/bench_on?sslmode=disable"
	url_off="postgres://postgres@127.0.0.1:$pgport/bench_off?sslmode=disable"
	start_server "$tmp/bin/switchboard" "$url_on" METRICS=1 || { tail -n 5 "$tmp/server.log" >&2; exit 1; }
	port_on=$srvport
	start_server "$tmp/bin/switchboard" "$url_off" || { tail -n 5 "$tmp/server.log" >&2; exit 1; }
	port_off=$srvport
	say "scenario 8: metrics on (:$port_on) and off (:$port_off), alternated ..."
	"$tmp/bin/loadtest" run -plan short -only 8 -server "http://127.0.0.1:$port_on" -server2 "http://127.0.0.1:$port_off" \
		-mock "$mock" -capture "$tmp/capture" -database-url "$url_on" -database-url2 "$url_off" -switchboard "$tmp/bin/switchboard" \
		-json "$tmp/results-overhead.json" >"$tmp/table-overhead.txt"
	echo
	machine
	echo "plan: overhead (scenario 8); this tree: $(git rev-parse --short HEAD)"
	cat "$tmp/table-overhead.txt"
	exit 0
fi

# The second server of a run measures a few per cent slower in an A/A comparison (the cluster
# carries the first run's data, WAL and autovacuum work): BENCH_BASELINE_LAST=1 runs this tree
# first, so that running both orders shows how much of a difference is the order.
if [ -n "${BENCH_BASELINE:-}" ] && [ -z "${BENCH_BASELINE_LAST:-}" ]; then
	run_plan baseline "$tmp/bin/switchboard-baseline"
fi
run_plan head "$tmp/bin/switchboard"
if [ -n "${BENCH_BASELINE:-}" ] && [ -n "${BENCH_BASELINE_LAST:-}" ]; then
	run_plan baseline "$tmp/bin/switchboard-baseline"
fi
echo
machine | tee ${out:+"$out/machine.txt"}
echo "plan: $mode; added = through Switchboard minus the mock called directly with the same vendor request, same load"
if [ -n "${BENCH_BASELINE:-}" ]; then
	echo
	echo "baseline: $BENCH_BASELINE ($(git rev-parse --short "$BENCH_BASELINE"))"
	cat "$tmp/table-baseline.txt"
	echo
	echo "this tree: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . 2>/dev/null || echo ' with uncommitted changes')"
fi
cat "$tmp/table-head.txt"
if [ -n "${BENCH_BASELINE:-}" ]; then
	echo
	"$tmp/bin/loadtest" compare "$tmp/results-baseline.json" "$tmp/results-head.json" | tee "$tmp/compare.txt"
fi
if [ -n "$out" ]; then
	cat "$tmp"/table-*.txt >"$out/table.txt"
	cp "$tmp"/results-*.json "$out/"
	[ ! -f "$tmp/compare.txt" ] || cp "$tmp/compare.txt" "$out/compare.txt"
	if [ "$mode" = peers ]; then
		# The targets charts of this run; of several: loadtest chart [-issue 49] -o F.svg bench/out/*-peers/results-head.json
		caption="bench/run.sh peers, $(git rev-parse --short HEAD), $(date -u '+%Y-%m-%d %H:%M UTC')"
		"$tmp/bin/loadtest" chart -o "$out/targets.svg" -caption "$caption" "$out/results-head.json" &&
			say "targets chart: $out/targets.svg"
		"$tmp/bin/loadtest" chart -issue 49 -o "$out/issue49.svg" -caption "$caption" "$out/results-head.json" &&
			say "issue 49 chart (items 1 and 2): $out/issue49.svg"
	fi
fi

if [ "$mode" = full ] && [ -z "${BENCH_ONLY:-}" ]; then
	profile "$out" 10s
	serve_profile "$out" 10
	say "results in $out"
fi
