#!/usr/bin/env bash
# make bench: every benchmark of this module into results/latest.txt, then
# every table of ../BENCHMARKS.md and ../benchmarks.svg regenerated from it
# (cmd/benchtable). One command, on its own redis-server (see main_test.go).
#
#   PASSES   processes of BenchmarkDecision and BenchmarkAtomic, each
#            -count 1 (default 6)
#   ROUNDS   rounds of TestAccuracy (default 3)
#   ANATOMY_ROUNDS   rounds of TestAnatomy (default 5)
set -euo pipefail
cd "$(dirname "$0")"
GO=${GO:-go}
PASSES=${PASSES:-6}
ROUNDS=${ROUNDS:-3}
ANATOMY_ROUNDS=${ANATOMY_ROUNDS:-5}
out=results/latest.txt
{
	echo "# bench-env start=$(date -u +%FT%TZ)"
	# Six processes of -count 1, not one -count 6: -count repeats a
	# benchmark back to back, so a slow spell of the machine would land on
	# a few rows only; each process also starts every group at a random row.
	for i in $(seq "$PASSES"); do
		"$GO" test -run '^$' -bench '^Benchmark(Decision|Atomic)$' -benchtime 10000x -count 1
	done
	"$GO" test -run '^$' -bench '^BenchmarkMemory$' -benchtime 1x -count 1
	"$GO" test -run '^TestAccuracy$' -v -accuracy.rounds "$ROUNDS"
	"$GO" test -run '^TestAnatomy$' -v -count "$ANATOMY_ROUNDS"
	echo "# bench-env end=$(date -u +%FT%TZ)"
} | tee "$out.tmp"
mv "$out.tmp" "$out"
"$GO" run ./cmd/benchtable -md ../BENCHMARKS.md -svg ../benchmarks.svg "$out"
echo "bench: wrote $out, BENCHMARKS.md's tables and benchmarks.svg"
