#!/usr/bin/env bash
# Failover measurement (issue #21): what a standby's promotion does to
# claims the ledger acknowledged, with asynchronous and with synchronous
# replication. A primary and a streaming standby (pg_basebackup -R) on unix
# sockets; the standby is stopped (a lagging or partitioned standby), N claims are made with `tether-pg ledger claim`
# (each acknowledged: exit 0 and an id, or given up: exit 3/125), the
# primary is crashed (immediate), the standby resumed and promoted, and the
# acknowledged ids are looked up on the promoted standby.
#
# Usage: bench/ledger-pg-failover/run.sh   (env: N=20, TETHER_PG=prebuilt)
# Needs PostgreSQL's server binaries (/usr/lib/postgresql/*/bin), go.
set -uo pipefail
N=${N:-20}
root=$(cd "$(dirname "$0")/../.." && pwd)
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r | head -1)
[ -x "$bindir/initdb" ] || { echo "run.sh: no PostgreSQL server binaries" >&2; exit 3; }
T=$(mktemp -d /tmp/ledger-pg-failover.XXXXXX)
as=()
if [ "$(id -u)" = 0 ]; then chown postgres: "$T"; as=(runuser -u postgres --); fi
chmod 755 "$T"
cleanup() {
	for d in primary standby; do
		[ -e "$T/$d/postmaster.pid" ] && "${as[@]}" "$bindir/pg_ctl" -D "$T/$d" -m immediate stop >/dev/null 2>&1
	done
	rm -rf "$T"
}
trap cleanup EXIT
cd "$T"
if [ -n "${TETHER_PG:-}" ]; then cp "$TETHER_PG" "$T/tether-pg"; else CGO_ENABLED=0 go build -C "$root" -o "$T/tether-pg" ./cmd/tether-pg; fi
env -u PGHOST "${as[@]}" "$bindir/initdb" -D "$T/primary" -U tether --auth=trust --no-sync --no-instructions >/dev/null
start() { # DIR SOCKDIR [extra -c ...]
	local d=$1 s=$2; shift 2
	mkdir -p "$s"; [ "$(id -u)" = 0 ] && chown postgres: "$s"
	"${as[@]}" "$bindir/pg_ctl" -D "$d" -l "$d.log" -w -o "-c listen_addresses= -c unix_socket_directories=$s $*" start >/dev/null
}
measure() { # MODE: async | sync
	local mode=$1 sync_names=""
	rm -rf "$T/primary.$mode" "$T/standby" && cp -a "$T/primary" "$T/primary.$mode"
	[ "$mode" = sync ] && sync_names="-c synchronous_standby_names=standby1"
	start "$T/primary.$mode" "$T/ps" -c wal_level=replica -c max_wal_senders=4 -c synchronous_commit=on $sync_names
	"${as[@]}" "$bindir/pg_basebackup" -h "$T/ps" -U tether -D "$T/standby" -R -X stream >/dev/null
	echo "primary_conninfo = 'host=$T/ps user=tether application_name=standby1'" | "${as[@]}" tee -a "$T/standby/postgresql.auto.conf" >/dev/null
	start "$T/standby" "$T/ss" -c hot_standby=on
	local P="postgres:///postgres?host=$T/ps&user=tether&statement_timeout=2000&connect_timeout=2"
	local S="postgres:///postgres?host=$T/ss&user=tether&connect_timeout=2"
	"$T/tether-pg" ledger --ledger "$P" claim warmup >/dev/null
	# the first claims stream to the standby while it keeps up
	local before=() acked=() gaveup=0 i
	for i in $(seq 5); do before+=("$("$T/tether-pg" ledger --ledger "$P" claim fo --instant $((1700000000 + i)))"); done
	sleep 1 # (let the standby replay them: measuring, not a readiness wait in a test)
	"${as[@]}" "$bindir/pg_ctl" -D "$T/standby" -m fast stop >/dev/null
	for i in $(seq 6 $((N + 5))); do
		if id=$("$T/tether-pg" ledger --ledger "$P" claim fo --instant $((1700000000 + i)) 2>/dev/null); then acked+=("$id"); else gaveup=$((gaveup + 1)); fi
	done
	"${as[@]}" "$bindir/pg_ctl" -D "$T/primary.$mode" -m immediate stop >/dev/null
	start "$T/standby" "$T/ss" -c hot_standby=on
	"${as[@]}" "$bindir/pg_ctl" -D "$T/standby" -w promote >/dev/null
	local kept=0 lost=0 bkept=0
	for id in "${before[@]}"; do "$T/tether-pg" ledger --ledger "$S" show "$id" >/dev/null 2>&1 && bkept=$((bkept + 1)); done
	for id in "${acked[@]}"; do
		if "$T/tether-pg" ledger --ledger "$S" show "$id" >/dev/null 2>&1; then kept=$((kept + 1)); else lost=$((lost + 1)); fi
	done
	printf '%-5s  before the standby went down: %d/%d kept;  while it was down: %d claims acknowledged, %d given up (not acknowledged); after the primary crashed and the standby was promoted: %d acknowledged claims kept, %d acknowledged claims LOST\n' \
		"$mode" "$bkept" "${#before[@]}" "${#acked[@]}" "$gaveup" "$kept" "$lost"
	"${as[@]}" "$bindir/pg_ctl" -D "$T/standby" -m immediate stop >/dev/null
}
measure async || echo "async: failed"
measure sync || echo "sync: failed"
