# Every target installs what it needs into .tools/ (pinned versions) so a
# fresh clone needs nothing beyond Go, gcc (cgo for SQLite) and Node.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

GO        ?= go
TOOLS     := $(CURDIR)/.tools
export PATH := $(TOOLS):$(PATH)

STATICCHECK_VERSION := v0.8.2
APIDIFF_VERSION     := v0.0.0-20261113113407-e3970619a1a4
BENCHSTAT_VERSION   := v0.0.0-20260908200009-22c9c6c9d4da

# The PostgreSQL suite runs against this DSN; CI=true makes it mandatory.
ACP_TEST_POSTGRES_DSN ?= postgres://postgres@127.0.0.1:5432/test?sslmode=disable
export ACP_TEST_POSTGRES_DSN

# Every module of the repository: `make test`, `make lint` and `make bench`
# visit each (nested modules own their go.mod).
MODULES := sdk . conformance/wire conformance/consumer conformance/bench patches/wirecheck \
           internal/tools/publishcheck

FUZZTIME ?= 30s

.PHONY: all test generate generate-check lint vet staticcheck apicheck bench \
        bench-compare fuzz-short conformance patches-check publish-check agents agents-tap web-test web-bench tools jaeger otel-test clean

all: lint test

## test: every module's tests with the race detector (the Jaeger tests
## are make otel-test's).
test:
	@for m in $(MODULES); do \
	  echo "== go test -race ($$m)"; \
	  (cd $$m && $(GO) test -race -count=1 -skip '^TestJaeger' ./...); \
	done

## generate: regenerate the SDK from sdk/schema (byte-stable).
generate:
	cd sdk && $(GO) run ./internal/cmd/generate

## generate-check: fail when the committed generated code drifts.
generate-check: generate
	git diff --exit-code -- sdk

## lint: go vet and staticcheck on every module.
lint: vet staticcheck

vet:
	@for m in $(MODULES); do (cd $$m && $(GO) vet ./...); done

staticcheck: $(TOOLS)/staticcheck
	@for m in $(MODULES); do (cd $$m && staticcheck ./...); done

## apicheck: apidiff from upstream v0.13.5 to sdk/ (zero incompatible changes).
apicheck: $(TOOLS)/apidiff
	./sdk/internal/apicheck/run.sh

## bench: every benchmark, once.
bench:
	@for m in $(MODULES); do \
	  (cd $$m && $(GO) test -run '^$$' -bench . -benchmem ./...); \
	done

## bench-compare: the SDK harness against upstream v0.13.5, side by side.
bench-compare: $(TOOLS)/benchstat
	./conformance/bench/compare.sh

## fuzz-short: every fuzz target for $(FUZZTIME).
fuzz-short:
	FUZZTIME=$(FUZZTIME) ./.ci/fuzz.sh

## conformance: wire, peer and adapter-identity suites.
conformance:
	./conformance/run.sh

## agents: the published ACP agents (pinned in conformance/agents, installed from package-lock.json)
## against the scripted model server, every scenario; AGENTS_ARGS go to the
## test binary (e.g. AGENTS_ARGS="-test.run TestAgents/copilot").
agents:
	./conformance/agents/run.sh $(AGENTS_ARGS)

## agents-tap: the tap conformance cases only (conformance/agents/tap_test.go):
## acpscope run drives the published agents and a Cursor-style fake through
## acpscope tap, bytes recorded on both sides.
agents-tap:
	./conformance/agents/run.sh -test.run '^TestTap$$' $(AGENTS_ARGS)

## patches-check: apply patches/ to upstream v0.13.5 and run its tests.
patches-check:
	./patches/check.sh

## publish-check: the root and SDK modules pass the module zip rules (no
## reserved or invalid file names), and a consumer module fetches the root
## module through a file-based module proxy built from this tree and builds.
## The tool's own tests prove a tree holding e.g. aux.go fails.
publish-check:
	cd internal/tools/publishcheck && $(GO) test -count=1 . && $(GO) run . -repo ../../..

## web-test: acpscope web in a real headless Chromium (Debian's package,
## installed only when /usr/bin/chromium is missing): the demo, the XSS
## capture, live updates, the status panel's layout and Stop, and the
## 5,000-subagent measurement.
web-test: /usr/bin/chromium
	ACPSCOPE_BROWSER_TESTS=1 $(GO) test -race -count=1 -run '^TestBrowser' -v ./cmd/acpscope/ ./cmd/acpscope/internal/web/

## web-bench: the 5,000-subagent browser measurement without the race
## detector, the server-side benchmark, and the 100,000-card figures
## (8 parallel requests, 100 pollers), and a session 2,000 executions wrote
## (400,000 rows: one change check, the first page, the sessions list;
## ACPSCOPE_WEB_DSN=postgres://… measures PostgreSQL).
web-bench: /usr/bin/chromium
	ACPSCOPE_BROWSER_TESTS=1 $(GO) test -count=1 -run '^TestBrowserFiveThousandSubagents$$' -v ./cmd/acpscope/
	$(GO) test -run '^$$' -bench SessionPage5000 -benchtime 10x ./cmd/acpscope/internal/web/
	ACPSCOPE_WEB_SCALE=1 $(GO) test -run '^$$' -bench 'SessionParallel8|Pollers100' -benchtime 1x ./cmd/acpscope/internal/web/
	ACPSCOPE_WEB_WIDE=1 $(GO) test -run '^$$' -bench 'Wide' -benchtime 3x ./cmd/acpscope/internal/web/

SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
/usr/bin/chromium:
	$(SUDO) apt-get update
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y chromium

tools: $(TOOLS)/staticcheck $(TOOLS)/apidiff $(TOOLS)/benchstat

## jaeger: Jaeger v1.75.0 (all in one: OTLP receiver, memory store, query
## API and UI), built once from its own tools module (internal/tools/jaeger)
## so the root module never requires Jaeger's dependencies; rebuilt only
## when that module's go.mod or go.sum changes. Heavy: niced.
$(TOOLS)/jaeger: internal/tools/jaeger/go.mod internal/tools/jaeger/go.sum
	mkdir -p $(TOOLS)
	cd internal/tools/jaeger && nice -n 15 $(GO) build -trimpath -o $(TOOLS)/jaeger github.com/jaegertracing/jaeger/cmd/jaeger
jaeger: $(TOOLS)/jaeger

## otel-test: the OpenTelemetry export against a real Jaeger started by the
## tests (a missing binary fails them under CI=true, else skips them): run,
## replay, tap and export read back through Jaeger's query API, and a
## collector that is down or silent.
otel-test: $(TOOLS)/jaeger
	ACPSCOPE_JAEGER=$(TOOLS)/jaeger $(GO) test -race -count=1 -run '^TestJaeger' -v ./cmd/acpscope/

$(TOOLS)/staticcheck:
	GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
$(TOOLS)/apidiff:
	GOBIN=$(TOOLS) $(GO) install golang.org/x/exp/cmd/apidiff@$(APIDIFF_VERSION)
$(TOOLS)/benchstat:
	GOBIN=$(TOOLS) $(GO) install golang.org/x/perf/cmd/benchstat@$(BENCHSTAT_VERSION)

clean:
	rm -rf $(TOOLS)
