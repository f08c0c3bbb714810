# redlimit. `make test` is the README's test command and what CI runs.
GO ?= go

.PHONY: test test-redis test-lua fuzz fuzz-ci generate check-generated lint bench demo ci

# Every tier. The real Redis and cluster tiers start their own servers when
# redis-server is installed, and say plainly when it is not.
test:
	$(GO) test ./...

# The same, but a missing redis-server is a failure, as in CI.
test-redis:
	REDLIMIT_REQUIRE_REDIS=1 $(GO) test ./tests/go/...

# The scripts alone, in gopher-lua (fast).
test-lua:
	$(GO) test ./tests/lua/...

# The scripts' fuzz targets (tests/lua/fuzz_test.go), one after another:
# go test -fuzz takes one target at a time. Plain go test runs their seeds.
# fuzz-ci is the bounded run for CI; make fuzz runs longer, and FUZZTIME
# sets the time per target either way.
FUZZ_TARGETS = FuzzTokenBucket FuzzLeakyBucket FuzzGCRA FuzzFixedWindow FuzzSlidingWindowCounter FuzzSlidingWindowLog

fuzz-ci: FUZZTIME ?= 10s
fuzz-ci: fuzz-run

fuzz: FUZZTIME ?= 5m
fuzz: fuzz-run

.PHONY: fuzz-run
fuzz-run:
	@for t in $(FUZZ_TARGETS); do \
		echo "$$t ($(FUZZTIME))"; \
		$(GO) test ./tests/lua -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) || exit 1; \
	done

generate:
	$(GO) generate ./bindings/...

# Fails when bindings/ or the golden files are stale, or when generating
# leaves changed or untracked files behind (git diff alone misses those).
check-generated:
	$(GO) run ./cmd/luagen -check -o bindings -pkg bindings -manifest bindings/scripts.json lua
	$(GO) test ./gen -run 'Golden|Deterministic'
	$(GO) generate ./bindings/...
	@out="$$(git status --porcelain -- bindings gen/testdata)"; if [ -n "$$out" ]; then echo "$$out"; echo "generated files are stale or untracked: run make generate and commit"; exit 1; fi

lint:
	@test -z "$$(gofmt -l .)" || { gofmt -l .; echo "gofmt needed"; exit 1; }
	$(GO) vet ./...
	cd bench && $(GO) vet ./...

# Side by side with the peers on a real redis-server (see BENCHMARKS.md):
# six passes of every benchmark, then medians and ratios.
bench:
	cd bench && for i in 1 2 3 4 5 6; do $(GO) test -run '^$$' -bench . -benchtime 10000x -count 1 || exit 1; done | tee new.txt
	cd bench && $(GO) run ./cmd/benchtable new.txt

demo:
	$(GO) run ./cmd/redlimit-demo

ci: lint check-generated
	REDLIMIT_REQUIRE_REDIS=1 $(MAKE) test
