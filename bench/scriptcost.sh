#!/usr/bin/env bash
# make bench-cost: what a decision costs inside redis-server, in
# instructions (valgrind's callgrind: a busy machine does not move them,
# unlike time; runs differ by up to 1.5 %, as keys and tables grow), for each shape cmd/scriptcost sends: a call of
# its own per request (pipelined), the multi-key form, one call of the
# script on many keys, a key's own batch. redis-server runs under
# callgrind on a free port, empty, for each script; nothing is written.
#
#   COST_SCRIPTS  the scripts (default ../lua/gcra.lua,
#                 ../lua/token_bucket.lua with refill smooth, then
#                 the four that take the form's layout themselves); any
#                 version's file works for alone and hot:
#                 git show REV:lua/gcra.lua > /tmp/old-gcra.lua
#   COST_SHAPES   default alone,form,joined,hot (the scripts that take
#                 the form's layout themselves: alone,form,itself,hot,
#                 mixed,grouped); envoy, with any script, counts
#                 envoyproxy/ratelimit's INCRBY and EXPIRE instead
#   COST_PER      requests per command (default 32): COST_PER=3 with
#                 COST_SHAPES=alone,itself is a three-descriptor Envoy
#                 request sent as three calls or as one (docs/envoy.md)
set -euo pipefail
cd "$(dirname "$0")"
GO=${GO:-go}
command -v valgrind >/dev/null || { echo "bench-cost: needs valgrind (apt-get install -y valgrind)"; exit 1; }
command -v redis-server >/dev/null || { echo "bench-cost: needs redis-server"; exit 1; }
SCRIPTS=${COST_SCRIPTS:-../lua/gcra.lua ../lua/token_bucket.lua ../lua/fixed_window.lua ../lua/sliding_window_counter.lua ../lua/leaky_bucket.lua ../lua/sliding_window_log.lua}
dir=$(mktemp -d)
port=
# On any exit, the server under callgrind goes too.
trap '[ -n "$port" ] && redis-cli -p "$port" shutdown nosave >/dev/null 2>&1; rm -rf "$dir"' EXIT
"$GO" build -o "$dir/scriptcost" ./cmd/scriptcost
redis-server --version
for file in $SCRIPTS; do
	file=$(realpath "$file")
	take=all
	shapes=${COST_SHAPES:-alone,form,joined,hot}
	case "$file" in
	*token_bucket*) take=smooth ;;
	*fixed_window* | *sliding_window* | *leaky_bucket*) shapes=${COST_SHAPES:-alone,form,itself,hot,mixed,grouped} ;;
	esac
	port=$(( 20000 + RANDOM % 20000 ))
	(cd "$dir" && valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" \
		redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no >"$dir/valgrind.log" 2>&1) &
	for _ in $(seq 60); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 1; done
	redis-cli -p "$port" ping >/dev/null || { cat "$dir/valgrind.log"; echo "bench-cost: redis-server under callgrind did not start"; exit 1; }
	(cd "$dir" && ./scriptcost -addr "127.0.0.1:$port" -file "$file" -take "$take" -shapes "$shapes" -per "${COST_PER:-32}") >"$dir/run.txt"
	redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
	port=
	wait
	echo "== $file (take/refill $take)"
	for shape in ${shapes//,/ }; do
		n=$(sed -n "s/^SHAPE $shape decisions=//p" "$dir/run.txt")
		f=$(grep -lE "^desc: Trigger: (dump|Client Request:) $shape\$" "$dir"/cg.out.* | head -1)
		total=$(sed -n 's/^summary: //p' "$f")
		echo "$shape: $(( total / n )) instructions per decision ($total over $n)"
	done
	rm -f "$dir"/cg.out*
done
