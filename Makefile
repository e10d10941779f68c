# Switchboard. `make run` starts the server on a throwaway local PostgreSQL; `make test` runs
# the whole suite (generation drift, vet, tests) on another throwaway cluster.
SHELL := /bin/bash
GO ?= go
PKGS := ./...

.PHONY: run build test unit generate check-generate lint vet bench tidy

build:
	$(GO) build -o bin/switchboard ./cmd/switchboard

# Development server. Without DATABASE_URL a PostgreSQL cluster is started in a temporary
# directory and removed on exit. BOOTSTRAP_API_KEY defaults to a well-known development key.
run: build
	@scripts/run.sh

test: check-generate vet
	@scripts/with-test-db.sh $(GO) test -race -count=1 $(PKGS)

# Tests only, without the generation and vet checks.
unit:
	@scripts/with-test-db.sh $(GO) test -count=1 $(PKGS)

generate:
	$(GO) tool oapi-codegen -config gen/v1api/oapi-codegen.yaml openapi/v1.yaml

check-generate:
	@tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && \
	sed "s#^output:.*#output: $$tmp/v1.gen.go#" gen/v1api/oapi-codegen.yaml > $$tmp/config.yaml && \
	$(GO) tool oapi-codegen -config $$tmp/config.yaml openapi/v1.yaml && \
	if ! diff -q $$tmp/v1.gen.go gen/v1api/v1.gen.go >/dev/null; then \
		echo "gen/v1api/v1.gen.go is out of date with openapi/v1.yaml: run make generate"; \
		diff -u gen/v1api/v1.gen.go $$tmp/v1.gen.go | head -40; exit 1; \
	fi

vet:
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

lint: vet check-generate

bench:
	@echo "benchmarks arrive with the benchmarks issue"

tidy:
	$(GO) mod tidy
