# redlimit. `make test` is the README's test command and what CI runs.
GO ?= go

.PHONY: test test-redis test-matrix test-lua fuzz fuzz-ci generate check-generated lint bench bench-keys bench-cost bench-partner demo rls screenshot ci download

# Modules of their own, for what needs a newer Go than the main module's
# go line (which consumers of luagen inherit) or brings a dependency: the
# demo page in headless Chromium (chromedp), go-redis's AutoPipeliner,
# ratelimit over rueidis and valkey-go, the framework adapters (gin,
# Echo, chi, Fiber, gRPC, OpenTelemetry), and the drop-in modules for
# redis_rate and ulule users, which run those projects' own test suites on
# a real Redis, and the Envoy rate limit service (rls), whose tests build
# envoyproxy/ratelimit through the module proxy (about two minutes on a
# fresh cache) and run it side by side.
NESTED := tests/browser tests/autopipeline clients/rueidis clients/valkey adapters/ginlimit adapters/echolimit adapters/echov4/echolimit adapters/chilimit adapters/fiberlimit adapters/grpclimit adapters/otellimit compat/redis_rate compat/ulule rls

# Every tier. The real Redis and cluster tiers start their own servers when
# redis-server is installed, and the browser test drives chromium when it
# is. go test shows nothing of a package that passes, skips included, so
# test-tools says before and after the run which tiers will skip, and why;
# under CI or REDLIMIT_REQUIRE_REDIS=1 those tests fail instead. The deny
# cache's and the coalescer's concurrency tests, httplimit.Transport's
# (its hooks run on net/http's writing goroutine), preflight's check of
# nodes at once and inflight's acquires across keys run again under -race
# (cgo: gcc); the Transport's partner test runs again with a busy loop on
# every core, alone, so that its load slows no other test. Of bench/, only
# the table generator's and the wrk reader's tests (the benchmarks run in
# make bench).
test:
	@$(MAKE) --no-print-directory test-tools
	$(GO) test ./...
	for m in $(NESTED); do (cd $$m && $(GO) test ./...) || exit 1; done
	cd bench && $(GO) test ./cmd/... ./internal/...
	$(GO) test -race -run 'TestDenyCache|TestCoalesc|TestLate' ./ratelimit/
	$(GO) test -race -run 'TestCheckEveryNode' ./ratelimit/preflight/
	$(GO) test -race ./ratelimit/internal/multikey/
	$(GO) test -race -run 'TestAcquiresGoTogether|TestImpatientAcquires' ./ratelimit/inflight/
	$(GO) test -race -run 'TestTransport[^K]|TestNewTransport' ./ratelimit/httplimit/
	REDLIMIT_SATURATE=1 $(GO) test -count=1 -run 'TestTransportKeepsNAtThePartner' ./ratelimit/httplimit/
	REDLIMIT_SATURATE=1 $(GO) test -race -count=1 -run 'TestEachCallGetsItsOwnAnswer' ./ratelimit/internal/multikey/
	REDLIMIT_SATURATE=1 $(GO) test -race -count=1 -run 'TestCoalescedImpatientBesideCalm' ./ratelimit/
	@$(MAKE) --no-print-directory test-tools

.PHONY: test-tools
test-tools:
	@command -v redis-server >/dev/null || echo "*** no redis-server on PATH: the real Redis, cluster, Functions, AutoPipeliner, Python and Node tiers, the compat modules (redis_rate, ulule) and the Envoy service (rls) SKIP (apt-get install -y redis-server)"
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || command -v google-chrome >/dev/null || [ -n "$$REDLIMIT_CHROMIUM" ] || echo "*** no chromium on PATH: the browser test SKIPS (apt-get install -y chromium)"
	@/usr/bin/python3 -c 'import redis' 2>/dev/null || python3 -c 'import redis' 2>/dev/null || [ -n "$$REDLIMIT_PYTHON" ] || echo "*** no Python with redis-py: the Python example's tests SKIP (apt-get install -y python3-redis)"
	@/usr/bin/python3 -c 'import fastapi, httpx, uvicorn' 2>/dev/null || python3 -c 'import fastapi, httpx, uvicorn' 2>/dev/null || [ -n "$$REDLIMIT_PYTHON" ] || echo "*** no Python with FastAPI, httpx and uvicorn: the FastAPI example's tests SKIP (apt-get install -y python3-fastapi python3-httpx python3-uvicorn)"
	@[ -d examples/node/node_modules/ioredis ] || echo "*** no examples/node/node_modules: the Node example's tests SKIP (cd examples/node && npm ci)"

# The real-Redis tiers, where a missing redis-server is a failure, as in CI
# (and so are a missing redis-py or examples/node/node_modules for the
# Python and Node examples).
test-redis:
	REDLIMIT_REQUIRE_REDIS=1 $(GO) test ./tests/servers/... ./ratelimit/... ./tests/polyglot/...

# The tiers that run on a server, on every server CI runs: the real-Redis,
# cluster and Functions tiers and the scenario tables (tests/servers) and
# the Python and Node examples (tests/polyglot), each server's redis-server
# and redis-cli first on PATH, its name and version printed first (and
# passed as REDLIMIT_SERVER, which TestMatrixServer checks). -count=1:
# go test's cache does not see the server behind a wrapper, so a run after
# the server changed could be an old one replayed. .ci/servers.sh installs
# them (as root) into SERVERS; MATRIX=valkey-8.1 runs one. It goes on past
# a failing server and fails at the end, naming it.
SERVERS ?= /opt/redlimit-servers
MATRIX ?= redis-7.0 redis-8.0 valkey-8.0 valkey-8.1
MATRIX_PKGS ?= ./tests/servers/ ./tests/polyglot/

test-matrix:
	@failed=; for s in $(MATRIX); do \
		bin=$(SERVERS)/$$s; \
		[ -x $$bin/redis-server ] && [ -x $$bin/redis-cli ] || { echo "test-matrix: no $$bin/redis-server or redis-cli: run .ci/servers.sh $(SERVERS) as root"; exit 1; }; \
		name=$$(PATH=$$bin:$$PATH redis-server --version | sed -nE 's/^([A-Za-z]+) server v=([^ ]+).*/\1 \2/p'); \
		[ -n "$$name" ] || { echo "test-matrix: $$bin/redis-server does not say its version"; exit 1; }; \
		echo "=== $$name ($$s)"; start=$$(date +%s); \
		PATH=$$bin:$$PATH REDLIMIT_REQUIRE_REDIS=1 REDLIMIT_SERVER="$$name" $(GO) test -count=1 $(MATRIX_PKGS) || failed="$$failed $$name,"; \
		echo "=== $$name: $$(( $$(date +%s) - start )) s"; \
	done; [ -z "$$failed" ] || { echo "test-matrix: failed on$${failed%,}"; exit 1; }

# The scripts alone, in gopher-lua (fast).
test-lua:
	$(GO) test ./tests/lua/...

# Every fuzz target: the scripts (tests/lua), luagen's header parser, lint
# and generator (gen), the key builder (ratelimit/internal/key), the
# Forwarded parser (ratelimit/clientip) and, in its own module, the Envoy
# service's configuration loader (rls), their targets found by go test
# -list so a new target cannot be left out. go test -fuzz takes one target
# at a time; plain go test runs their seeds. fuzz-ci is the bounded run CI
# makes; make fuzz runs 50 times longer; FUZZTIME sets the budget per target either
# way, FUZZ_PKGS the packages (make fuzz FUZZ_PKGS=./gen for luagen alone;
# a package of a nested module is written module:package, as rls:.).
# CI's budget is a count of inputs, never a duration: Go 1.26's coordinator
# races a duration -fuzztime on a loaded machine and fails with "context
# deadline exceeded" and no input (golang/go#75804); a count only takes
# longer there. 2000 inputs is 0.3-12 s a target on an idle 2-core machine.
# A failing input lands in the package's testdata/fuzz and from then on
# runs in every go test.
FUZZ_PKGS ?= ./tests/lua ./gen ./ratelimit/internal/key ./ratelimit/clientip rls:.

fuzz-ci: FUZZTIME ?= 2000x
fuzz-ci: fuzz-run

fuzz: FUZZTIME ?= 100000x
fuzz: fuzz-run

.PHONY: fuzz-run
fuzz-run:
	@for e in $(FUZZ_PKGS); do \
		case $$e in *:*) d=$${e%%:*}; p=$${e#*:};; *) d=.; p=$$e;; esac; \
		list=$$(cd $$d && $(GO) test -list '^Fuzz' $$p) || { echo "$$list"; echo "fuzz: cannot list the targets of $$e"; exit 1; }; \
		ts=$$(echo "$$list" | grep '^Fuzz') || { echo "fuzz: $$e has no fuzz target"; exit 1; }; \
		for t in $$ts; do \
			echo "$$e $$t ($(FUZZTIME))"; \
			(cd $$d && $(GO) test $$p -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME)) || exit 1; \
		done; \
	done

# The bundle's bindings over go-redis, and over rueidis and valkey-go in
# their modules (luagen -client rueidis|valkey; both need Go 1.25).
CLIENT_BINDINGS := clients/rueidis clients/valkey

generate:
	$(GO) generate ./bindings/...
	for m in $(CLIENT_BINDINGS); do (cd $$m && $(GO) generate ./bindings/...) || exit 1; done

# Fails when bindings/ or the golden files are stale, or when generating
# leaves changed or untracked files behind (git diff alone misses those).
check-generated:
	$(GO) run ./cmd/luagen -strict -check -o bindings -pkg bindings -manifest bindings/scripts.json -functions redlimit lua
	for m in $(CLIENT_BINDINGS); do (cd $$m && $(GO) run github.com/redlimit/redlimit/cmd/luagen -strict -check -client $$(basename $$m) -o bindings -pkg bindings ../../lua) || exit 1; done
	$(GO) test ./gen -run 'Golden|Deterministic'
	$(MAKE) --no-print-directory generate
	@out="$$(git status --porcelain -- bindings gen/testdata $(addsuffix /bindings,$(CLIENT_BINDINGS)))" || { echo "check-generated needs git and a git checkout"; exit 1; }; if [ -n "$$out" ]; then echo "$$out"; echo "generated files are stale or untracked: run make generate and commit"; exit 1; fi

# Every module's dependencies, fetched once before the tests (CI runs it,
# so the list of modules lives here alone).
download:
	$(GO) mod download
	cd bench && $(GO) mod download
	for m in $(NESTED); do (cd $$m && $(GO) mod download) || exit 1; done

lint:
	@test -z "$$(gofmt -l .)" || { gofmt -l .; echo "gofmt needed"; exit 1; }
	$(GO) vet ./...
	cd bench && $(GO) vet ./...
	for m in $(NESTED); do (cd $$m && $(GO) vet ./...) || exit 1; done

# Side by side with the peers on a real redis-server of its own (see
# BENCHMARKS.md): six passes of the decision benchmarks, the memory
# benchmark, the accuracy and outbound tests, TestAnatomy and the HTTP tier (wrk) into
# bench/results/latest.txt, then every table of BENCHMARKS.md and
# benchmarks.svg regenerated from it (about 25 minutes), and the outbound
# Transport's partner measurement (PARTNER lines; docs/http.md reads them).
# SMOKE=1 make bench checks the harness in about 3 minutes and writes no
# table.
bench:
	GO=$(GO) bench/run.sh

# The rows that judge batching calls for other keys, in a few minutes:
# the distinct scenario at 64 goroutines, every algorithm over go-redis,
# rueidis and valkey-go beside its row without batching, the floors, ulule
# and redis_rate, then the HTTP rows from 100 000 client addresses; the
# keys table and the targets printed, the raw output in
# bench/results/keys.txt (OUT=results/NAME.txt for another file), nothing
# committed written. Before and after a change: see bench/keys.sh.
bench-keys:
	GO=$(GO) bench/keys.sh

# What a decision costs inside redis-server, in instructions (callgrind:
# a busy machine does not move them; runs differ by up to 1.5 %), in each shape a call may take: a call
# of its own, the multi-key form, one call on many keys, a key's batch.
# Needs valgrind; COST_SCRIPTS=file.lua for another version's script,
# COST_SHAPES and COST_PER (requests per call, 32) for other shapes.
bench-cost:
	GO=$(GO) bench/scriptcost.sh

# The partner measurement of docs/http.md alone (BenchmarkTransportPartner
# on a redis-server of its own): PARTNER_RUNS runs of PARTNER_DURATION
# each, idle and then with a busy loop on every core.
bench-partner: PARTNER_RUNS ?= 10
bench-partner: PARTNER_DURATION ?= 20s
bench-partner:
	$(GO) test -run '^$$' -bench '^BenchmarkTransportPartner$$' -benchtime 1x -timeout 120m ./ratelimit/httplimit/ -args -partner.runs=$(PARTNER_RUNS) -partner.dur=$(PARTNER_DURATION)

# The demo page on http://127.0.0.1:8080/ (embedded miniredis; -redis ADDR
# for a real one). Ctrl-C stops it.
demo:
	$(GO) run ./cmd/redlimit-demo

# The Envoy rate limit service (docs/envoy.md) on an embedded miniredis
# with an example configuration; it prints an Envoy snippet and requests
# to try. Ctrl-C stops it.
rls:
	cd rls && $(GO) run ./cmd/redlimit-rls -demo

# Refresh docs/demo.png, the README's screenshot: the compare view on the
# boundary attack, as the browser test draws it at desktop size.
screenshot:
	cd tests/browser && REDLIMIT_SCREENSHOT=$(CURDIR)/docs/demo.png $(GO) test -count=1 -run TestCompareView/desktop .

ci: lint check-generated
	REDLIMIT_REQUIRE_REDIS=1 $(MAKE) test
