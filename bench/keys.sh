#!/usr/bin/env bash
# make bench-keys: the rows that judge batching calls for other keys, in a
# few minutes, on a redis-server of its own (see main_test.go): the
# distinct scenario at 64 goroutines (100 000 keys) for every algorithm
# over go-redis, rueidis and valkey-go, each beside its row without
# batching (ratelimit.WithoutCoalescing, "_nobatch"), the floors, ulule
# and redis_rate; then TestHTTP's rows from 100 000 client addresses
# (wrk, X-Forwarded-For from a trusted proxy). It prints cmd/benchtable's
# keys table and the targets this run measures. The raw output goes to
# OUT (default results/keys.txt, not committed); BENCHMARKS.md and
# results/latest.txt are left alone.
#
#   KEYS_PASSES     processes of BenchmarkDecision, each -count 1 (default 5)
#   KEYS_BENCHTIME  decisions per row and pass (default 20000x)
#   KEYS_HTTP_ROUNDS, KEYS_HTTP_DURATION  rounds of the HTTP rows and each
#                   row's run (default 3, 5s)
#
# Before and after a change: make bench-keys OUT=results/keys-before.txt,
# change, make bench-keys OUT=results/keys-after.txt; benchstat compares
# the two files row by row.
set -euo pipefail
cd "$(dirname "$0")"
GO=${GO:-go}
OUT=${OUT:-results/keys.txt}
KEYS_PASSES=${KEYS_PASSES:-5}
KEYS_BENCHTIME=${KEYS_BENCHTIME:-20000x}
KEYS_HTTP_ROUNDS=${KEYS_HTTP_ROUNDS:-3}
KEYS_HTTP_DURATION=${KEYS_HTTP_DURATION:-5s}
command -v wrk >/dev/null || { echo "bench-keys: the HTTP rows need wrk (apt-get install -y wrk)"; exit 1; }
algorithms='token_bucket|gcra|leaky_bucket|fixed_window|sliding_window_log|sliding_window_counter'
rows="^scenario=distinct/g=64/impl=(floor(_rueidis|_valkey)?|redlimit_($algorithms)(_nobatch)?(_rueidis|_valkey)?|ulule_limiter|redis_rate)\$"
{
	echo "# bench-env start=$(date -u +%FT%TZ)"
	for i in $(seq "$KEYS_PASSES"); do
		"$GO" test -run '^$' -bench '^BenchmarkDecision$' -benchtime "$KEYS_BENCHTIME" -count 1 -timeout 30m -decision.run "$rows"
	done
	"$GO" test -run '^TestHTTP$' -v -timeout 30m -http.run '_ips' -http.rounds "$KEYS_HTTP_ROUNDS" -http.duration "$KEYS_HTTP_DURATION"
	echo "# bench-env end=$(date -u +%FT%TZ)"
} | tee "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
"$GO" run ./cmd/benchtable -sections keys,targets "$OUT"
echo "bench-keys: raw output in bench/$OUT"
