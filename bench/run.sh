#!/usr/bin/env bash
# make bench: every benchmark of this module into results/latest.txt, then
# every table of ../BENCHMARKS.md and ../benchmarks.svg regenerated from it
# (cmd/benchtable). One command, on its own redis-server (see main_test.go).
#
#   PASSES   processes of BenchmarkDecision and BenchmarkAtomic, each
#            -count 1 (default 6)
#   ROUNDS   rounds of TestAccuracy (default 3)
#   ANATOMY_ROUNDS   rounds of TestAnatomy (default 5)
#   HTTP_ROUNDS      rounds of TestHTTP, the HTTP tier driven by wrk
#                    (default 6); HTTP_DURATION each row's run (default 5s)
#   OUTBOUND_ROUNDS  rounds of TestOutbound, the outbound limit (default
#                    3); OUTBOUND_DURATION each recipe's run (default 5s)
#   BENCHTIME        decisions per row and pass (default 10000x)
#   RLS_BENCHTIME, RLS_COUNT  requests per row and passes of BenchmarkRLS,
#            the Envoy service beside the reference (default 20000x, 3)
#   PARTNER_RUNS, PARTNER_DURATION  runs of each load of
#            BenchmarkTransportPartner, httplimit.Transport before a
#            counting partner (default 3, 20s; docs/http.md's table is 10)
#
# SMOKE=1 checks the harness in a few minutes: one short pass of
# everything into results/smoke.txt (not committed), the tables printed,
# not written; BENCHMARKS.md and results/latest.txt are left alone.
set -euo pipefail
cd "$(dirname "$0")"
GO=${GO:-go}
out=results/latest.txt
if [ "${SMOKE:-}" = 1 ]; then
	: "${PASSES:=1}" "${ROUNDS:=1}" "${ANATOMY_ROUNDS:=1}" "${HTTP_ROUNDS:=1}" "${HTTP_DURATION:=1s}" "${BENCHTIME:=1000x}"
	: "${OUTBOUND_ROUNDS:=1}" "${OUTBOUND_DURATION:=3s}" "${RLS_BENCHTIME:=2000x}" "${RLS_COUNT:=1}"
	: "${PARTNER_RUNS:=1}" "${PARTNER_DURATION:=3s}"
	out=results/smoke.txt
fi
PASSES=${PASSES:-6}
ROUNDS=${ROUNDS:-3}
ANATOMY_ROUNDS=${ANATOMY_ROUNDS:-5}
HTTP_ROUNDS=${HTTP_ROUNDS:-6}
HTTP_DURATION=${HTTP_DURATION:-5s}
OUTBOUND_ROUNDS=${OUTBOUND_ROUNDS:-3}
OUTBOUND_DURATION=${OUTBOUND_DURATION:-5s}
BENCHTIME=${BENCHTIME:-10000x}
RLS_BENCHTIME=${RLS_BENCHTIME:-20000x}
RLS_COUNT=${RLS_COUNT:-3}
PARTNER_RUNS=${PARTNER_RUNS:-3}
PARTNER_DURATION=${PARTNER_DURATION:-20s}
command -v wrk >/dev/null || { echo "bench: the HTTP tier needs wrk (apt-get install -y wrk)"; exit 1; }
{
	echo "# bench-env start=$(date -u +%FT%TZ)"
	# Six processes of -count 1, not one -count 6: -count repeats a
	# benchmark back to back, so a slow spell of the machine would land on
	# a few rows only; each process also starts every group at a random row.
	for i in $(seq "$PASSES"); do
		"$GO" test -run '^$' -bench '^Benchmark(Decision|Atomic)$' -benchtime "$BENCHTIME" -count 1 -timeout 60m
	done
	"$GO" test -run '^$' -bench '^BenchmarkMemory$' -benchtime 1x -count 1
	"$GO" test -run '^TestAccuracy$' -v -accuracy.rounds "$ROUNDS"
	"$GO" test -run '^TestOutbound$' -v -outbound.rounds "$OUTBOUND_ROUNDS" -outbound.dur "$OUTBOUND_DURATION"
	"$GO" test -run '^TestAnatomy$' -v -count "$ANATOMY_ROUNDS"
	"$GO" test -run '^TestHTTP$' -v -timeout 60m -http.rounds "$HTTP_ROUNDS" -http.duration "$HTTP_DURATION"
	# The Envoy service beside envoyproxy/ratelimit (its own module; the
	# numbers of docs/envoy.md#performance, read by hand, not by benchtable).
	(cd ../rls && "$GO" test -run '^$' -bench '^BenchmarkRLS$' -benchtime "$RLS_BENCHTIME" -count "$RLS_COUNT" -timeout 60m .)
	# httplimit.Transport before a partner that counts arrivals (the root
	# module's; docs/http.md reads the PARTNER lines, benchtable does not).
	(cd .. && "$GO" test -run '^$' -bench '^BenchmarkTransportPartner$' -benchtime 1x -timeout 60m ./ratelimit/httplimit/ \
		-args -partner.runs="$PARTNER_RUNS" -partner.dur="$PARTNER_DURATION")
	echo "# bench-env end=$(date -u +%FT%TZ)"
} | tee "$out.tmp"
mv "$out.tmp" "$out"
if [ "${SMOKE:-}" = 1 ]; then
	"$GO" run ./cmd/benchtable "$out"
	echo "bench: smoke run complete ($out); BENCHMARKS.md not written"
	exit 0
fi
"$GO" run ./cmd/benchtable -md ../BENCHMARKS.md -svg ../benchmarks.svg "$out"
echo "bench: wrote $out, BENCHMARKS.md's tables and benchmarks.svg"
