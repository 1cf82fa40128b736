#!/usr/bin/env bash
# bench/compare/run.sh OLD NEW: ledger built from two trees, in one
# interleaved hyperfine run per command: start-up (--version, show), the
# one-shot cycle (run JOB -- true) and the three-process cycle (claim,
# start, finish). OLD and NEW are folders holding a ledger binary each
# (built as install.sh builds: CGO_ENABLED=0 go build -trimpath -ldflags -w).
# Prints hyperfine's summary, NEW's mean relative to OLD's, per command.
# Needs hyperfine. Leaves nothing behind.
set -euo pipefail
[ $# = 2 ] || { echo "usage: $0 OLD_DIR NEW_DIR" >&2; exit 2; }
command -v hyperfine >/dev/null || { echo "run.sh: hyperfine not found" >&2; exit 3; }
old=$(cd "$1" && pwd)/ledger new=$(cd "$2" && pwd)/ledger
T=$(mktemp -d "${TMPDIR:-/tmp}/ledger-compare.XXXXXX")
trap 'rm -rf "$T"' EXIT
runs=${RUNS:-200}
for v in old new; do
	L=${!v}
	TETHER_LEDGER=$T/$v "$L" run warm -- true
	echo "$(TETHER_LEDGER=$T/$v "$L" latest warm --field id)" >"$T/$v.id"
done
cycle='export TETHER_LEDGER=%s; id=$('"'"'%s'"'"' claim c --owner $$) && '"'"'%s'"'"' start "$id" && '"'"'%s'"'"' finish "$id" --status completed --exit-code 0'
hf() { hyperfine -N -w 20 -r "$runs" --style basic "$@" 2>&1 | sed -n '/Summary/,$p'; }
echo "== ledger --version"; hf -n old "$old --version" -n new "$new --version"
echo "== ledger show ID --field status"
hf -n old "env TETHER_LEDGER=$T/old $old show $(cat "$T/old.id") --field status" -n new "env TETHER_LEDGER=$T/new $new show $(cat "$T/new.id") --field status"
echo "== ledger run JOB -- true"
hf -n old "env TETHER_LEDGER=$T/old $old run r -- true" -n new "env TETHER_LEDGER=$T/new $new run r -- true"
echo "== claim, start, finish (three processes)"
runs=$((runs / 2))
hyperfine -w 10 -r "$runs" --style basic \
	-n old "$(printf "$cycle" "$T/old" "$old" "$old" "$old")" \
	-n new "$(printf "$cycle" "$T/new" "$new" "$new" "$new")" 2>&1 | sed -n '/Summary/,$p'
