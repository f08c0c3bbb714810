# redlimit. `make test` is the README's test command and what CI runs.
GO ?= go

.PHONY: test test-redis test-lua generate check-generated lint bench demo ci

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

generate:
	$(GO) generate ./bindings/...

# Fails when bindings/ is stale or generation leaves new untracked files.
check-generated:
	$(GO) run ./cmd/luagen -check -o bindings -pkg bindings -manifest bindings/scripts.json lua
	@test -z "$$(git status --porcelain -- bindings)" || { git status --porcelain -- bindings; echo "bindings/ has uncommitted or untracked files"; exit 1; }

lint:
	@test -z "$$(gofmt -l .)" || { gofmt -l .; echo "gofmt needed"; exit 1; }
	$(GO) vet ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./tests/go/... | tee bench.out

demo:
	$(GO) run ./cmd/redlimit-demo

ci: lint check-generated
	REDLIMIT_REQUIRE_REDIS=1 $(MAKE) test
