#!/usr/bin/env bash
# Benchmark: cleanup of N leftover processes after the payload exits.
#
#   bench/reap/run.sh [ROUNDS] [N]        (defaults: 15 rounds, N=300)
#
# The payload (bash) starts N `sleep` processes in the background and exits,
# writing $EPOCHREALTIME as its last act. Each round times, interleaved and
# in alternating order, the span from that instant until nothing is left:
#
#   reap       reap --grace 5 -- bash payload.sh   (until reap returns)
#   reference  the payload runs as its own process group (set -m); once it
#              exits, bash sends `kill -TERM -- -PGID` and polls
#              `pgrep -g PGID` every 10 ms until it finds nothing
#
# The reference runs under a subreaper (bench/reap/subreaper) so that its
# killed leftovers are reaped — on a machine whose PID 1 never reaps, pgrep
# would otherwise see their zombies for ever. Every round checks that no
# leftover is left. Prints the medians and the ratio reap/reference.
set -euo pipefail

if [ -z "${BENCH_REAP_INNER:-}" ]; then
	repo=$(cd "$(dirname "$0")/../.." && pwd)
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	(cd "$repo" && CGO_ENABLED=0 go build -o "$tmp/reap" ./cmd/reap &&
		CGO_ENABLED=0 go build -o "$tmp/subreaper" ./bench/reap/subreaper)
	BENCH_REAP_INNER=$tmp "$tmp/subreaper" bash "$0" "$@"
	exit
fi

tmp=$BENCH_REAP_INNER
rounds=${1:-15}
n=${2:-300}
marker=86400.25 # sleep's argument: lets pgrep -f find any leftover of ours

cat >"$tmp/payload.sh" <<PAYLOAD
for ((i = 0; i < $n; i++)); do sleep $marker & done
echo "\$EPOCHREALTIME" >"\$1"
PAYLOAD

# ms T0 T1: milliseconds between two $EPOCHREALTIME stamps.
ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f\n", (b - a) * 1000 }'; }

none_left() {
	if pgrep -f "^sleep $marker\$" >/dev/null; then
		echo "FAIL: leftovers still present after $1:" >&2
		pgrep -af "^sleep $marker\$" | head >&2
		exit 1
	fi
}

trial_reap() {
	rm -f "$tmp/t0"
	"$tmp/reap" --grace 5 -- bash "$tmp/payload.sh" "$tmp/t0" 2>"$tmp/reap.err"
	local t1=$EPOCHREALTIME
	grep -q "stopped $n leftover processes" "$tmp/reap.err" ||
		{ echo "FAIL: reap said: $(cat "$tmp/reap.err")" >&2; exit 1; }
	none_left reap
	ms "$(<"$tmp/t0")" "$t1" >>"$tmp/reap.ms"
}

trial_reference() {
	rm -f "$tmp/t0"
	set -m
	bash "$tmp/payload.sh" "$tmp/t0" &
	local pg=$!
	set +m
	wait "$pg"
	kill -TERM -- "-$pg" 2>/dev/null || true
	while pgrep -g "$pg" >/dev/null; do sleep 0.01; done
	local t1=$EPOCHREALTIME
	none_left reference
	ms "$(<"$tmp/t0")" "$t1" >>"$tmp/ref.ms"
}

median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

: >"$tmp/reap.ms"
: >"$tmp/ref.ms"
echo "cleanup of $n leftover processes after the payload exits; $rounds interleaved rounds"
for ((r = 1; r <= rounds; r++)); do
	if ((r % 2)); then trial_reap; trial_reference; else trial_reference; trial_reap; fi
	printf 'round %2d  reap %8s ms  reference %8s ms\n' "$r" "$(tail -1 "$tmp/reap.ms")" "$(tail -1 "$tmp/ref.ms")"
done
mr=$(median "$tmp/reap.ms")
mf=$(median "$tmp/ref.ms")
ratio=$(awk -v a="$mr" -v b="$mf" 'BEGIN { printf "%.2f", a / b }')
echo "median: reap ${mr} ms, reference ${mf} ms, ratio ${ratio}x (target <= 1.0x); none left"
