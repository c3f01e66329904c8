# mcpfn — build, test, run locally, benchmark, deploy.
# `make test` is the project's test command (and what .ci/run calls).

SHELL := /bin/bash
GO ?= go
# Every go command here runs on Go $(TOOLCHAIN), which the go command fetches
# from the module proxy on first use (~76 MB, into the module cache): Go
# 1.26's race detector can crash on its own in testing/synctest bubbles
# (golang/go#78156; decision 0040). mcpfn itself needs only the go.mod's Go
# 1.26, which `make test` checks too (`floor`): a module using mcpfn keeps
# its own toolchain.
TOOLCHAIN ?= go1.27.3
export GOTOOLCHAIN := $(TOOLCHAIN)
# BUILD_TAGS picks the functions' build flavour for `make build` and
# `sam build` (from the environment too), e.g. BUILD_TAGS=mcpfn_otel;
# default: the lite build (docs/tracing.md).
BUILD_TAGS ?=
NODE_TOOLS := tools/node

.PHONY: all test floor test-go lint vet staticcheck bench bench-lambda bench-gateway soak local build deps node-deps browser-deps fmt validate-template

all: build

## deps: Go modules, the npm packages the tests use (the MCP Inspector, the
## conformance suite) and Chromium for the audit viewer's browser test
## (installed with apt when run as root; otherwise it says how). DynamoDB
## Local, the Runtime Interface Emulator and the CloudFormation validator are
## not here: the tests, `make local` and `mcpfn template -check` install them
## on first use into the per-user cache, as for any module using mcpfn
## (docs/local.md).
deps: node-deps browser-deps
	$(GO) mod download

CHROMIUM_BINS := chromium chromium-browser google-chrome headless-shell

browser-deps:
	@if command -v $(CHROMIUM_BINS) >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "deps: installing chromium (apt-get) for the viewer's browser test"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else \
	  echo "deps: no chromium; the viewer's browser test (localtest TestViewerInABrowser) will skip, and fail with CI=true."; \
	  echo "      install it: sudo apt-get install -y chromium  (or any chromium/google-chrome on PATH)"; \
	fi

node-deps: $(NODE_TOOLS)/node_modules/.installed

$(NODE_TOOLS)/node_modules/.installed: $(NODE_TOOLS)/package.json $(NODE_TOOLS)/package-lock.json
	cd $(NODE_TOOLS) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

## test: vet, staticcheck and every Go test (DynamoDB Local, X-Ray stand-in
## included), and the module built with the machine's own Go (`floor`).
test: deps floor vet staticcheck test-go

## floor: every package (tests included) compiles with the machine's own Go,
## not only with $(TOOLCHAIN): what a module using mcpfn on Go 1.26 builds.
floor:
	GOTOOLCHAIN=local $(GO) version
	GOTOOLCHAIN=local $(GO) vet ./...

# The packages with concurrency run under the race detector (once: not
# again without it); the rest run plainly. Committed fuzz corpora run as
# ordinary tests in both. The default build is lite (docs/tracing.md): the
# local stack's tests run in the tracing flavour (TRACING_TAGS: its OTLP
# end-to-end tests need OpenTelemetry in the functions and the gateway), and
# the emitters' packages once more with both SDKs linked.
RACE_PKGS := ./adapter/ ./audit/ ./calltoken/ ./gateway/
TRACING_TAGS := mcpfn_xraysdk,mcpfn_otel
test-go:
	$(GO) version
	$(GO) test -race -count=1 -timeout 20m $(RACE_PKGS)
	$(GO) test -race -count=1 -timeout 20m -tags $(TRACING_TAGS) ./localtest/
	$(GO) test -count=1 -timeout 20m -tags $(TRACING_TAGS) ./audit/ ./gateway/
	$(GO) test -count=1 -timeout 20m $$($(GO) list ./... | grep -v -E '/mcpfn/(adapter|audit|calltoken|gateway|localtest)$$')

## test-stress: the timing-sensitive tests STRESS_N times (default 20) under
## -race while STRESS_LOAD busy processes (default 2: both cores) compete
## for the CPU, e.g. `make test-stress STRESS_N=500 STRESS_RUN=TestProgressReachesClientWhileHandlerRuns`.
## A test that fails here is a defect of the product or of the test. The
## local stack's suite takes minutes a run: `make test-stress
## STRESS_PKGS=./localtest/ STRESS_TAGS=$(TRACING_TAGS) STRESS_N=3`.
## docs/benchmarks.md, "Flakes found and fixed (issue 21)".
STRESS_N ?= 20
STRESS_LOAD ?= 2
STRESS_PKGS ?= ./gateway/ ./adapter/ ./audit/ ./taskstore/ ./calltoken/ ./handlers/ ./mcpfntest/ ./agentcore/
STRESS_RUN ?= .
STRESS_TAGS ?=
.PHONY: test-stress
test-stress:
	@set -e; pids=""; for i in $$(seq $(STRESS_LOAD)); do (while :; do :; done) & pids="$$pids $$!"; done; \
	trap 'kill $$pids 2>/dev/null' EXIT; \
	$(GO) test -race -count=$(STRESS_N) -timeout 120m $(if $(STRESS_TAGS),-tags $(STRESS_TAGS)) -run '$(STRESS_RUN)' $(STRESS_PKGS)

## fuzz: every native fuzz target for FUZZTIME each (default 1m), e.g.
## `make fuzz FUZZTIME=10m`. Inputs that fail land in the package's
## testdata/fuzz/<Target>/, to be committed with the fix.
FUZZTIME ?= 1m
.PHONY: fuzz
fuzz:
	@set -e; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' .); do \
	  pkg=./$$(dirname $$f); \
	  for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
	    echo "fuzz $$t in $$pkg for $(FUZZTIME)"; \
	    $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

vet:
	$(GO) vet ./...
	$(GO) vet -tags $(TRACING_TAGS) ./audit/ ./gateway/ ./localtest/

staticcheck:
	$(GO) tool staticcheck ./...
	$(GO) tool staticcheck -tags $(TRACING_TAGS) ./audit/ ./gateway/ ./localtest/

fmt:
	gofmt -w $$(git ls-files '*.go')

## validate-template: @aws/cloudformation-validate (offline, no credentials) over
## template.yaml; fails on any FATAL, ERROR or WARN finding that
## templatetest/cfn-validate-excuses.json does not excuse, and on stale excuses.
## The same test runs in `make test`.
validate-template:
	$(GO) test -count=1 -run '^TestCloudFormationValidate' -v ./templatetest/

## bench: the benchmarks behind docs/benchmarks.md.
bench: deps
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./adapter/ ./audit/ ./gateway/ | tee .bench.out

## bench-lambda: issue 12's benchmark (docs/benchmarks.md): an echo tool on
## mcpfn's public API against the same echo on bare aws-lambda-go, under the
## Runtime Interface Emulator in one run (cold start, warm p50/p99,
## invokes/s, peak RSS, bootstrap size; audit off and on against DynamoDB
## Local), then the issue's ratios with PASS/MISS. RUNS=5 repeats the whole
## measurement and judges each bound on its median over the runs, with the
## spread. BENCH_LAMBDA_FLAGS passes flags on, e.g.
## BENCH_LAMBDA_FLAGS='-n 31 -warm 5000', or '-flavours default -cpuprofile
## .local/bench/prof' for CPU profiles of the warm calls.
RUNS ?= 1
BENCH_LAMBDA_FLAGS ?=
bench-lambda:
	$(GO) run ./bench/lambda -runs $(RUNS) $(BENCH_LAMBDA_FLAGS)

## bench-gateway: issue 21's benchmark (docs/benchmarks.md): mcpfn's gateway
## (cmd/mcpfn-gateway as deployed: JWT auth, signed calls, audit on against
## DynamoDB Local) and a bare go-sdk Streamable HTTP forwarder with no auth
## and no audit, each a process of its own in front of the same echo
## function under the Runtime Interface Emulator, against direct Invokes of
## it, in one run: added latency p50/p99 at 1 and 16 clients, requests/s,
## cold start, peak RSS, binary size; then the ratios with PASS/MISS.
## BENCH_GATEWAY_FLAGS passes flags on, e.g.
## BENCH_GATEWAY_FLAGS='-n 21 -calls 6000' or '-cpuprofile gw.pprof'.
BENCH_GATEWAY_FLAGS ?=
bench-gateway:
	$(GO) run ./bench/gateway $(BENCH_GATEWAY_FLAGS)

## soak: issue 21's soak (docs/benchmarks.md): the whole local stack (the
## gateway in its own process, every function, DynamoDB Local) for SOAK
## (default 10m) at a fixed concurrency of go-sdk MCP clients, with the demo's
## mix (reads, writes, deletes, progress calls, tasks, bad requests); then
## every call reconciled with its audit row, RSS and p99 judged after the
## warm-up, and .local/soak/soak.svg and report.txt written. SOAK_FLAGS
## passes flags on, e.g. SOAK_FLAGS='-clients 32'.
SOAK ?= 10m
SOAK_FLAGS ?=
soak:
	$(GO) run ./bench/soak -duration $(SOAK) $(SOAK_FLAGS)

# ---- Lambda builds ----
# This repository walks the path an outside project walks: every command
# below is `mcpfn` (cmd/mcpfn), run from this module as a project runs it
# with `go tool mcpfn`. Every function is a Go binary named bootstrap for
# provided.al2023 on arm64, static, without aws-lambda-go's RPC mode,
# trimmed and stripped so that one commit always builds the same bytes
# (`mcpfn build`; BUILD_TAGS adds build tags).

BIN_DIR ?= bin
MCPFN := $(GO) run ./cmd/mcpfn

.PHONY: agentcore-schemas agentcore-policies template template-check

## build: every function of template.yaml into $(BIN_DIR)/<LogicalId>/bootstrap (linux/arm64).
build:
	$(MCPFN) build -all -tags "$(BUILD_TAGS)" -o $(BIN_DIR)

# `sam build` (Metadata BuildMethod: makefile) runs `make build-<LogicalId>`
# with ARTIFACTS_DIR set; whatever lands there is the function's package.
# `mcpfn build` knows every function: a tool's from mcpfn-tools.json, the
# gateway and the AgentCore interceptor from mcpfn's own code with the
# catalog beside them.
build-%:
	$(if $(ARTIFACTS_DIR),,$(error ARTIFACTS_DIR is not set; sam build sets it))$(MCPFN) build -tags "$(BUILD_TAGS)" -o "$(ARTIFACTS_DIR)" $*

## template: rewrite template.yaml's mcpfn regions and mcpfn-tools.json from
## the tools' declarations (`mcpfn template`); template-check fails when
## they are stale (`mcpfn template -check`, also run by the tests).
template:
	$(MCPFN) template

template-check:
	$(MCPFN) template -check

## agentcore-schemas: AgentCore Gateway tool schemas from the catalog into $(BIN_DIR)/agentcore.
agentcore-schemas:
	$(MCPFN) agentcore-schemas -o $(BIN_DIR)/agentcore

## agentcore-policies: Cedar policies (one permit per tool, by JWT scope) from the catalog
## into $(BIN_DIR)/agentcore/policies.cedar; GATEWAY_ARN=… names the gateway (default: any).
agentcore-policies:
	$(MCPFN) agentcore-policies -o $(BIN_DIR)/agentcore/policies.cedar $(if $(GATEWAY_ARN),-gateway-arn $(GATEWAY_ARN))

# ---- local stack (docs/local.md) ----
# `make local` is `mcpfn local` for this repository: the whole application
# on this machine without Docker (DESIGN.md §5). It builds the functions for
# the host, and its first run installs DynamoDB Local (npm) and the Runtime
# Interface Emulator (go install) into the per-user cache; node-deps is only
# for the README tour's MCP Inspector. Foreground; Ctrl-C or SIGTERM stops
# every process. Built with mcpfn_otel, so the stack and its functions trace
# both ways (X-Ray and OTLP stand-ins; docs/tracing.md).

HOST_BIN_DIR ?= .local/bin

## local: the whole application on this machine, foreground (docs/local.md).
local: node-deps
	$(GO) build -tags mcpfn_otel -o $(HOST_BIN_DIR)/mcpfn ./cmd/mcpfn
	exec $(HOST_BIN_DIR)/mcpfn local
