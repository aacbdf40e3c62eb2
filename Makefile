SHELL := bash
GO ?= go
ADDR ?= 127.0.0.1:8080

# Everything builds with Go 1.27.3: it has the standard library's security
# fixes govulncheck asks for (net/http, mime/multipart, html/template,
# crypto/x509 and crypto/tls), which the Go 1.26.8 of a new machine lacks.
# The go command fetches it once from the Go module proxy (about 76 MB).
export GOTOOLCHAIN := go1.27.3

.PHONY: run build test fuzz chaos soak bench generate lint vulncheck check release release-check

run: ## Start the server on the embedded database (./data/tollgate.db)
	$(GO) run ./cmd/tollgate serve --addr $(ADDR)

build: ## Build bin/tollgate
	$(GO) build -o bin/tollgate ./cmd/tollgate

# One package at a time (-p 1): the crash tests SIGKILL servers every
# 0.3-1.5 s and need the machine's cores to make progress between kills;
# sharing two cores with the web and storage suites starved them into
# timeouts. Tests inside a package still run in parallel.
test: ## Every test, on SQLite and a real PostgreSQL, with the race detector; then each fuzz target for 5s
	$(GO) test -race -count=1 -p 1 -timeout 18m ./...
	$(MAKE) fuzz FUZZTIME=5s

# Native fuzz targets: the workflow document parser and validator, the
# request decoder, async steps' reports, the JSON-Schema form decoder, the upload form, and the check of JSON that arrives
# encoded. Each keeps its seed corpus in testdata/fuzz/ beside it.
FUZZTIME ?= 30s
FUZZ_TARGETS := ./domain/flow:FuzzParseDocument ./web:FuzzDecodeJSON ./web/api:FuzzReadReport ./web:FuzzSchemaForm ./web:FuzzUploadDocuments ./domain:FuzzCheckJSON

fuzz: ## Fuzz each target for FUZZTIME (30s)
	set -e; for t in $(FUZZ_TARGETS); do \
		$(GO) test "$${t%%:*}" -run '^$$' -fuzz "^$${t##*:}$$" -fuzztime $(FUZZTIME); \
	done

# make test runs the chaos test for 40 s and the crash tests with three
# fifths of their cycles, to stay under 20 minutes; this runs the chaos
# test for CHAOS_TIME and the crash tests whole.
CHAOS_TIME ?= 10m

chaos: ## Three servers on one PostgreSQL under SIGKILL, SIGSTOP and a database restart for CHAOS_TIME (10m), then every run checked; the same for schedules fired every second; then the crash tests whole
	TOLLGATE_CHAOS_DURATION=$(CHAOS_TIME) $(GO) test -race -run '^(TestChaos|TestChaosSchedules|TestCrashRecovery(SQLite|Postgres|ReplaySQLite|ReplayPostgres))$$' -count=1 -timeout 60m -v ./cmd/tollgate

# The soak: one server on PostgreSQL under SOAK_RATE resumes a second with
# 1,000 live pages open, for SOAK_TIME; a line of figures each minute.
# Then the web tests that make test runs smaller, to stay under 20
# minutes, run whole (TOLLGATE_SOAK_DURATION tells them): ?wait= keeping
# its bound under 300 waits held at once instead of 100.
SOAK_TIME ?= 30m
SOAK_RATE ?= 200
SOAK_WEB_TESTS := TestAPIWaitHoldsItsBoundUnderLoad

soak: ## One server under SOAK_RATE (200) resumes/s and 1,000 open live pages for SOAK_TIME (30m): RSS, goroutines, descriptors, connections and p99 each minute, which must stay flat; then the web tests make test runs smaller, whole
	TOLLGATE_SOAK_DURATION=$(SOAK_TIME) TOLLGATE_SOAK_RATE=$(SOAK_RATE) $(GO) test -run '^TestSoak$$' -count=1 -timeout 90m -v ./cmd/tollgate
	TOLLGATE_SOAK_DURATION=$(SOAK_TIME) $(GO) test -race -run '^($(SOAK_WEB_TESTS))$$' -count=1 -timeout 20m -v ./web

# BENCH=kernel,herd runs only the parts named (all when empty): kernel, herd,
# peers, trips, hooks, replay, web, mail, upload, policies, servers.
# peers builds River (bench/river, a Go module of its own, fetched from the
# Go module proxy on its first build) and runs it on the PostgreSQL server
# the herd uses, beside the herd, with Tollgate p99 / River p99. BENCH=peers
# alone still runs the herd, on PostgreSQL only and without its memory
# figure, so that the ratio always comes from one run.
BENCH ?= $(TOLLGATE_BENCH)

bench: ## Suspend→resume, declarative and replay workflows on both databases; the herd beside River (peers); the web app with 1M suspensions; what mail and Slack add to creating suspensions; approval policies' memory and vote latency; one server against three on one PostgreSQL (BENCH=kernel,herd picks parts)
	TOLLGATE_BENCH=$(BENCH) $(GO) test -run '^TestBench' -tags bench -count=1 -timeout 60m -v ./cmd/tollgate

generate: ## Regenerate generated code (templ components), and the generated parts of the manual (the configuration and CLI references, the Go blocks)
	$(GO) tool templ generate
	$(GO) generate ./...
	$(GO) test ./cmd/tollgate -run '^(TestConfigurationReference|TestCLIReference)$$' -count=1 -args -update-docs
	$(GO) test . -run '^TestManualGoBlocks$$' -count=1 -args -update-docs

# bench/river is a module of its own, which ./... leaves out: it is vetted
# and checked by the staticcheck pinned in go.mod (go tool -n builds it and
# names the binary) from its own directory. govulncheck skips it: it is a
# bench's program, never shipped.
lint: ## gofmt, go vet, staticcheck and govulncheck
	test -z "$$(gofmt -l .)"
	$(GO) vet ./...
	$(GO) vet -tags bench ./cmd/tollgate
	$(GO) -C bench/river vet ./...
	$(GO) tool staticcheck ./...
	staticcheck=$$($(GO) tool -n staticcheck) && cd bench/river && "$$staticcheck" ./...
	$(MAKE) vulncheck

# govulncheck reads the Go vulnerability database as the module
# golang.org/x/vulndb holds it at VULNDB (its OSV reports, indexed here
# once by the database's own indexdb): the database's web site is not
# reachable from every machine, the Go module proxy is. Move VULNDB to the
# newest (go list -m golang.org/x/vulndb@latest names it) to check
# against newer reports.
VULNDB ?= v0.0.0-20261105234957-e22db6528018
VULNDB_DIR ?= $(or $(TMPDIR),/tmp)/tollgate-vulndb-$(VULNDB)

vulncheck: ## govulncheck against the Go vulnerability database of VULNDB; fails on a vulnerability the code reaches
	test -f $(VULNDB_DIR)/index/db.json || { \
		src=$$($(GO) mod download -json golang.org/x/vulndb@$(VULNDB) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p'); \
		test -d "$$src/data/osv" && $(GO) run golang.org/x/vulndb/cmd/indexdb@$(VULNDB) -vulns "$$src/data/osv" -out $(VULNDB_DIR).tmp && \
		rm -rf $(VULNDB_DIR) && mv $(VULNDB_DIR).tmp $(VULNDB_DIR); }
	$(GO) tool govulncheck -db file://$(VULNDB_DIR) ./...

check: generate lint test ## What CI runs, plus drift checks
	git diff --exit-code
	$(GO) mod tidy -diff
	$(GO) -C bench/river mod tidy -diff
	diff <(ls migrations/postgres) <(ls migrations/sqlite)

# The release's version is the VERSION file's: a release is cut by setting
# it (and the CHANGELOG's heading) to the new version. make release stamps
# it into the binaries and tags the commit v<VERSION> (a local tag, pushed
# with the release), so that the tag a binary names exists; a tag of that
# name on another commit stops it. TAG=no builds without tagging, as
# release-check does with its own version.
VERSION ?= v$(shell cat VERSION)
TAG ?= yes
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
# The SBOM of each binary is written by syft, built from the Go module
# proxy on the first release (a few minutes; the go command keeps it).
SYFT ?= $(GO) run github.com/anchore/syft/cmd/syft@v1.57.1

release: ## The release of VERSION: for linux and darwin on amd64 and arm64, an archive of the static binary, its SPDX SBOM, LICENSE, the manual (README and docs/) and CHANGELOG, with SHA256SUMS of the archives, in dist/; tags the commit v<VERSION>
	@if [ "$(TAG)" = yes ]; then \
		tagged=$$(git rev-parse -q --verify "refs/tags/$(VERSION)^{commit}" || true); \
		if [ -n "$$tagged" ] && [ "$$tagged" != "$(COMMIT)" ]; then \
			echo "The tag $(VERSION) is on $$tagged, not on this commit: set VERSION (the file) to the new release's version." >&2; exit 1; \
		fi; \
		if [ -n "$$(git status --porcelain)" ]; then \
			echo "The working tree has changes a release would not contain: commit them first." >&2; exit 1; \
		fi; \
	fi
	rm -rf dist && mkdir -p dist
	set -e; for p in $(PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; name=tollgate-$(VERSION)-$$os-$$arch; \
		echo "dist/$$name.tar.gz"; \
		mkdir -p dist/$$name; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath \
			-ldflags "-s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)" -o dist/$$name/tollgate ./cmd/tollgate; \
		$(SYFT) scan -q file:dist/$$name/tollgate --source-name tollgate --source-version $(VERSION) -o spdx-json=dist/$$name/tollgate.spdx.json; \
		cp LICENSE README.md ARCHITECTURE.md CHANGELOG.md dist/$$name/ && mkdir dist/$$name/docs && cp docs/*.md dist/$$name/docs/; \
		tar -C dist -czf dist/$$name.tar.gz $$name; \
		rm -r dist/$$name; \
	done
	cd dist && sha256sum *.tar.gz > SHA256SUMS
	@if [ "$(TAG)" = yes ] && ! git rev-parse -q --verify "refs/tags/$(VERSION)" >/dev/null; then \
		git tag $(VERSION) $(COMMIT) && echo "Tagged $(COMMIT) $(VERSION); push it with the release: git push origin $(VERSION)"; \
	fi

# What CI checks of a release, on linux/amd64: the archive's checksum
# matches, its binary is static, runs and says the version it was given,
# and its SBOM lists the modules built into it.
release-check: ## Build the linux/amd64 release archive and check it
	$(MAKE) release PLATFORMS=linux/amd64 VERSION=v0.0.0-check TAG=no
	cd dist && sha256sum -c SHA256SUMS
	tar -C dist -xzf dist/tollgate-v0.0.0-check-linux-amd64.tar.gz
	cd dist/tollgate-v0.0.0-check-linux-amd64 && test -s LICENSE && test -s README.md && test -s CHANGELOG.md && test -s docs/operating.md
	$(GO) version -m dist/tollgate-v0.0.0-check-linux-amd64/tollgate | grep -q 'CGO_ENABLED=0'
	dist/tollgate-v0.0.0-check-linux-amd64/tollgate version | grep -q '^tollgate v0.0.0-check '
	dist/tollgate-v0.0.0-check-linux-amd64/tollgate version --json | grep -q '"version":"v0.0.0-check"'
	grep -q '"spdxVersion"' dist/tollgate-v0.0.0-check-linux-amd64/tollgate.spdx.json
	grep -q 'pkg:golang/github.com/jackc/pgx/v5@' dist/tollgate-v0.0.0-check-linux-amd64/tollgate.spdx.json
