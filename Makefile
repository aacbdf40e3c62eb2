SHELL := bash
GO ?= go
ADDR ?= 127.0.0.1:8080

.PHONY: run build test bench generate lint check

run: ## Start the server on the embedded database (./data/tollgate.db)
	$(GO) run ./cmd/tollgate serve --addr $(ADDR)

build: ## Build bin/tollgate
	$(GO) build -o bin/tollgate ./cmd/tollgate

# One package at a time (-p 1): the crash tests SIGKILL servers every
# 0.3-1.5 s and need the machine's cores to make progress between kills;
# sharing two cores with the web and storage suites starved them into
# timeouts. Tests inside a package still run in parallel.
test: ## Every test, on SQLite and a real PostgreSQL, with the race detector
	$(GO) test -race -count=1 -p 1 -timeout 18m ./...

# BENCH=kernel,herd runs only the parts named (all when empty): kernel, herd,
# trips, hooks, replay, web, mail, upload, policies.
BENCH ?= $(TOLLGATE_BENCH)

bench: ## Suspend→resume, declarative and replay workflows on both databases; the web app with 1M suspensions; what mail adds to creating suspensions; approval policies' memory and vote latency (BENCH=kernel,herd picks parts)
	TOLLGATE_BENCH=$(BENCH) $(GO) test -run '^TestBench' -tags bench -count=1 -timeout 60m -v ./cmd/tollgate

generate: ## Regenerate generated code (templ components, from the repository root)
	$(GO) tool templ generate
	$(GO) generate ./...

lint: ## gofmt, go vet and staticcheck
	test -z "$$(gofmt -l .)"
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

check: generate lint test ## What CI runs, plus drift checks
	git diff --exit-code
	$(GO) mod tidy -diff
	diff <(ls migrations/postgres) <(ls migrations/sqlite)
