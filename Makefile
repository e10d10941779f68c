# Switchboard. `make run` starts the server on a throwaway local PostgreSQL; `make test` runs
# the whole suite (generation drift, vet, lint, tests) on another throwaway cluster.
SHELL := /bin/bash
GO ?= go
PKGS := ./...
# A test binary's time limit. go test's default (10m) is less than the server package took
# under -race on a busy two-core machine (604 s in a run on 27 November 2026, killed there):
# the limit is there to catch a hung test, not a slow machine.
TEST_TIMEOUT ?= 40m

.PHONY: fmt-check run build test check check-bench-tags unit screenshots chromium axe wrk redis audio generate check-generate check-generate-openapi check-generate-sqlc lint vet bench bench-bulk tidy check-go

# Every target says what it does (==> lines): a first run on a fresh clone spends minutes
# downloading and compiling, and should not look stuck.

# go.mod's `go` line is the oldest Go that builds this; an older one fails here, clearly.
check-go:
	@GO=$(GO) scripts/check-go.sh

build: check-go
	@GO=$(GO) scripts/build.sh

# Development server. Without DATABASE_URL a PostgreSQL cluster is started in a temporary
# directory and removed on exit. BOOTSTRAP_API_KEY defaults to a well-known development key;
# WEBHOOK_ALLOW_PRIVATE=1 in development only. Ends with a banner of addresses and the key.
run: build
	@scripts/run.sh

# The suite's output goes through scripts/testsummary: a line per package, the output of
# each failed test, and a last line of totals; pipefail keeps the exit status of go test.
# The prerequisites come first: what is missing is said (or installed) before minutes of
# compiling, never after.
# The static checks (check-generate, gofmt, golangci-lint) run beside the tests, niced so that
# the tests' compiling comes first, with their output in bin/static-checks.log, printed after
# the tests' summary with the time they took; `make test` fails when either fails, and says
# which.
# Before, they ran first and took 4-5 minutes of a fresh clone's run while the tests, which
# mostly wait on PostgreSQL, child processes and Chromium, had CPU to spare. (Side by side on
# a cold two-core machine, golangci-lint's package loading once outran its 10-minute timeout;
# it has no timeout of its own now, see .golangci.yaml.) The figures: docs/benchmarks.md,
# "The test suite's time".
# TEST_PARALLEL: tests of a package at once (t.Parallel ones). go test's default is
# GOMAXPROCS, 2 here; the slow packages' tests spend much of their time waiting.
TEST_PARALLEL ?= 4
# -trimpath for the tests (and lint, below), and through GOFLAGS for the process tests' own
# `go build` of the server: without it Go's build cache keys each package of this module by
# its directory, so a fresh clone in a new folder compiled every one of them again (283 s for
# server's test binary alone, docs/benchmarks.md "The test suite's time"); with it a clone
# anywhere reuses each package that its change did not touch. The machine's own GOFLAGS
# (go env) are kept.
TRIM_GOFLAGS := $(strip $(shell $(GO) env GOFLAGS 2>/dev/null) -trimpath)
test: check-go chromium axe wrk redis audio
	@$(GO) build -o bin/testsummary ./scripts/testsummary
	@echo "==> Static checks (generation drift, the benchmarks behind build tags, gofmt, golangci-lint) in the background, beside the tests: their output follows the tests' summary"
	@echo "==> Tests: go test -race on a throwaway PostgreSQL (compiling with -race comes first: minutes on a fresh clone); a line per package as it finishes"
	@(start=$$SECONDS; nice -n 10 $(MAKE) --no-print-directory check-generate check-bench-tags lint; rc=$$?; \
		echo "(static checks: $$((SECONDS - start)) s)"; exit $$rc) > bin/static-checks.log 2>&1 & checks=$$!; \
	set -o pipefail; GOFLAGS="$(TRIM_GOFLAGS)" scripts/with-test-db.sh $(GO) test -race -count=1 -parallel $(TEST_PARALLEL) -timeout $(TEST_TIMEOUT) -json $(PKGS) | bin/testsummary; tests=$$?; \
	wait $$checks; static=$$?; \
	echo "==> Static checks (bin/static-checks.log):"; cat bin/static-checks.log; \
	if [ $$static -ne 0 ]; then echo "FAIL: static checks (above)"; fi; \
	if [ $$tests -ne 0 ]; then echo "FAIL: tests (summary above)"; fi; \
	[ $$tests -eq 0 ] && [ $$static -eq 0 ]

# The static checks of `make test` alone: generation drift, the benchmarks behind build tags,
# gofmt, golangci-lint.
check: check-generate check-bench-tags lint

# The measurements behind build tags (bench/run.sh knowledge, make bench-bulk) compile with
# their package's tests only under their tag, so nothing else notices when a test file of the
# package breaks them (a helper of the same name did, once): vet them with their tags.
check-bench-tags:
	@echo "==> go vet of the benchmarks behind build tags (knowledgebench, bulkbench)"
	@GOFLAGS="$(TRIM_GOFLAGS)" $(GO) vet -tags knowledgebench,bulkbench ./store/ ./bulk/

# Headless Chromium for the dashboard's browser tests (Debian's package, installed if missing).
chromium:
	@scripts/ensure-chromium.sh

# axe-core for the webchat widget's accessibility checks (npm's package, pinned, in a cache
# directory outside the repository; fetched if missing).
axe:
	@scripts/ensure-axe.sh

# redis-server for the shared rate limiter's tests (Debian's package, installed if missing).
redis:
	@scripts/ensure-redis.sh

# espeak-ng and sox, which make the audio of the recordings tests (Debian's packages,
# installed if missing).
audio:
	@scripts/ensure-audio.sh

# wrk, the load generator of bench/run.sh peers (Debian's package, installed if missing), for
# bench/cmd/loadtest's test of it.
wrk:
	@scripts/ensure-wrk.sh

# Retakes the dashboard's screenshots in docs/screenshots (phone and desktop sizes of each
# page), through the browser tests.
screenshots: check-go chromium axe
	@echo "==> Screenshots: the dashboard's browser test writes docs/screenshots/*.png"
	@DASHBOARD_SCREENSHOTS=docs/screenshots scripts/with-test-db.sh $(GO) test -count=1 -run InABrowser ./dashboard/
	@DASHBOARD_SCREENSHOTS=docs/screenshots scripts/with-test-db.sh $(GO) test -count=1 -run 'TestWebchatWidgetInABrowser|TestInboxInABrowser' ./server/

# Tests only, without the generation and vet checks.
unit: check-go chromium axe wrk redis audio
	@$(GO) build -o bin/testsummary ./scripts/testsummary
	@set -o pipefail; GOFLAGS="$(TRIM_GOFLAGS)" scripts/with-test-db.sh $(GO) test -count=1 -parallel $(TEST_PARALLEL) -timeout $(TEST_TIMEOUT) -json $(PKGS) | bin/testsummary

# sqlc built without cgo parses SQL with libpg_query compiled to WebAssembly instead of C: the
# same parser and byte-identical output, and its first build spends about a fifth less CPU
# (305 s against 381 s of user+sys on a cold cache), all of it on the critical path of a fresh
# clone's `make test`.
SQLC := CGO_ENABLED=0 $(GO) tool -modfile=tools/go.mod sqlc

generate:
	$(GO) tool oapi-codegen -config gen/v1api/oapi-codegen.yaml openapi/v1.yaml
	$(GO) tool oapi-codegen -config gen/apiapi/oapi-codegen.yaml openapi/api.yaml
	$(GO) tool oapi-codegen -config gen/embedapi/oapi-codegen.yaml openapi/embed.yaml
	$(SQLC) generate -f store/sqlc.yaml
	GO=$(GO) scripts/readme-config-table.sh

# Regenerates each contract, and the SQL queries, into a temporary copy and fails on any
# difference with gen/ (including a generated file left behind by a removed query file).
check-generate: check-generate-openapi check-generate-sqlc

check-generate-openapi:
	@echo "==> check-generate: gen/v1api, gen/apiapi and gen/embedapi against openapi/ (the first run compiles oapi-codegen)"
	@tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && status=0 && \
	for pair in v1api:v1 apiapi:api embedapi:embed; do \
		pkg=$${pair%%:*}; doc=$${pair##*:}; out=$$(ls gen/$$pkg/*.gen.go); \
		sed "s#^output:.*#output: $$tmp/$$pkg.gen.go#" gen/$$pkg/oapi-codegen.yaml > $$tmp/$$pkg.yaml && \
		$(GO) tool oapi-codegen -config $$tmp/$$pkg.yaml openapi/$$doc.yaml || exit 1; \
		if ! diff -q $$tmp/$$pkg.gen.go $$out >/dev/null; then \
			echo "$$out is out of date with openapi/$$doc.yaml: run make generate"; \
			diff -u $$out $$tmp/$$pkg.gen.go | head -40; status=1; \
		fi; \
	done; exit $$status

check-generate-sqlc:
	@echo "==> check-generate: store/internal/dbsqlc against store/ (the first run compiles sqlc: a few minutes)"
	@tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && mkdir -p $$tmp/store && \
	cp -r store/sqlc.yaml store/migrations store/queries $$tmp/store/ && \
	$(SQLC) generate -f $$tmp/store/sqlc.yaml && \
	if ! diff -r -q $$tmp/store/internal/dbsqlc store/internal/dbsqlc >/dev/null; then \
		echo "store/internal/dbsqlc is out of date with store/queries or store/migrations: run make generate"; \
		diff -r -u store/internal/dbsqlc $$tmp/store/internal/dbsqlc | head -40; exit 1; \
	fi

vet: fmt-check
	@echo "==> go vet"
	@$(GO) vet $(PKGS)

fmt-check:
	@echo "==> gofmt"
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# golangci-lint (pinned in tools/go.mod, configured in .golangci.yaml) after vet and gofmt.
# golangci-lint's govet runs go vet's own analyzers (the list of cmd/vet, which golangci-lint
# mirrors), so lint does not also run `go vet`: on a fresh clone that second pass compiled
# every package a second time without -race, for no check that lint lacks. `make vet` is
# still there for a quick look.
# golangci-lint loads the packages through `go list -export`, whose builds Go's cache keys by
# the clone's folder without -trimpath: in a new folder lint took 163 s alone, 32 s with it.
# Its own cache lives in the checkout (bin/, or GOLANGCI_LINT_CACHE): shared between
# checkouts, its entries keep the absolute paths of the checkout that made them, and those of
# a deleted checkout come back as findings that their //nolint can no longer suppress
# (golangci-lint's issues 6656 and 6695).
lint: fmt-check
	@echo "==> golangci-lint, govet included (the first run compiles it: a few minutes)"
	@GOLANGCI_LINT_CACHE="$${GOLANGCI_LINT_CACHE:-$(CURDIR)/bin/golangci-lint-cache}" GOFLAGS="$(TRIM_GOFLAGS)" \
		$(GO) tool -modfile=tools/go.mod golangci-lint run --allow-parallel-runners $(PKGS)

# BASELINE=<git ref> also measures that commit's server in the same run, side by side.
bench:
	@BENCH_BASELINE=$(BASELINE) bench/run.sh short

# The 100,000-row bulk delete of docs/benchmarks.md, and what the foreign-key indexes change
# (migrations 0041-0042) and the retention job walking each workspace's activity index, each on a
# throwaway PostgreSQL, like the tests.
bench-bulk:
	@scripts/with-test-db.sh $(GO) test -count=1 -tags bulkbench -run TestMeasureDelete100k -v ./bulk/
	@scripts/with-test-db.sh $(GO) test -count=1 -tags bulkbench -run 'TestMeasureForeignKeyIndexes|TestMeasureRetentionSweep' -v ./store/

tidy:
	$(GO) mod tidy
