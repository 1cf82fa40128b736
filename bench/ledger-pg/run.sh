#!/usr/bin/env bash
# Benchmark: ledger on PostgreSQL against psql doing the same three
# conditional statements (INSERT … RETURNING, then two UPDATE … WHERE
# status = … RETURNING), each its own psql invocation over the same unix
# socket, in one interleaved run (issue #12):
#
#   (a) one claim→start→finish cycle as 3 process invocations: median
#   (b) 8 concurrent loops of such cycles: throughput (cycles/s), median of rounds
#   (c) the cycle in a database holding $BIG executions vs an empty one
#   (d) the one-shot `ledger run JOB -- true` (1 process) against (a)'s psql
#   (e) round trips per invocation: the client's writes on the socket
#       (strace), less the startup message and the final Terminate, and the
#       statements the server saw (pg_stat_statements)
#
# It starts its own throwaway server as internal/pgtest does: initdb into a
# temporary folder, a unix socket only, fsync on, as user postgres when run
# as root; stopped (immediate) and removed at exit.
#
# Usage: bench/ledger-pg/run.sh   (env: N, ROUNDS, PER_LOOP, BIG, RT,
#        LEDGER, TETHER_PG=prebuilt binaries instead of building ./cmd/ledger
#        and ./cmd/tether-pg)
#
# ledger itself does not link the PostgreSQL driver: it hands a postgres://
# store's command to tether-pg beside it (one exec). (a) also times
# "tether-pg ledger" called directly, to show what that hand-off costs.
# Needs go, PostgreSQL's server binaries and psql, bash ≥ 5; strace for (e).
set -euo pipefail

N=${N:-100}              # cycles per tool in (a) and per database in (c)
ROUNDS=${ROUNDS:-6}      # rounds of (b) per tool (each tool goes first in turn)
PER_LOOP=${PER_LOOP:-15} # cycles per loop in (b)
LOOPS=8
BIG=${BIG:-100000}
RT=${RT:-10} # cycles counted in (e)

root=$(cd "$(dirname "$0")/../.." && pwd)

# --- a throwaway server ----------------------------------------------------

bindir=
for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
	if [ -x "$d/initdb" ] && [ -x "$d/postgres" ] && [ -x "$d/psql" ]; then bindir=$d && break; fi
done
if [ -z "$bindir" ] && command -v initdb >/dev/null; then
	bindir=$(dirname "$(readlink -f "$(command -v initdb)")")
fi
[ -n "$bindir" ] || { echo "run.sh: no PostgreSQL server binaries (initdb) in /usr/lib/postgresql/*/bin or PATH" >&2; exit 3; }

T=$(mktemp -d /tmp/ledger-pg-bench.XXXXXX)
as_server=()
if [ "$(id -u)" = 0 ]; then
	chown postgres: "$T"
	as_server=(runuser -u postgres --)
fi
chmod 755 "$T"
stop() {
	[ -e "$T/data/postmaster.pid" ] && "${as_server[@]}" "$bindir/pg_ctl" -D "$T/data" -m immediate stop >/dev/null 2>&1
	rm -rf "$T"
}
trap stop EXIT
env -u PGHOST -u PGUSER -u PGDATABASE "${as_server[@]}" "$bindir/initdb" -D "$T/data" -U tether --auth=trust \
	-E UTF8 --no-locale --no-sync --no-instructions >"$T/initdb.log" 2>&1 || { cat "$T/initdb.log" >&2; exit 3; }
# fsync and synchronous_commit on: every commit costs what it costs a user.
"${as_server[@]}" "$bindir/pg_ctl" -D "$T/data" -l "$T/server.log" -w -o "-c listen_addresses= \
	-c unix_socket_directories=$T -c fsync=on -c synchronous_commit=on -c max_connections=100 \
	-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track_utility=on" start >/dev/null ||
	{ cat "$T/server.log" >&2; exit 3; }

dsn() { echo "postgres:///$1?host=$T&user=tether"; }
Q() { "$bindir/psql" -X -q -A -t -v ON_ERROR_STOP=1 -d "$(dsn "$1")" -c "$2"; } # DB SQL
for db in a b big empty d rt; do Q postgres "CREATE DATABASE $db" >/dev/null; done
Q postgres "CREATE EXTENSION pg_stat_statements" >/dev/null

build() { CGO_ENABLED=0 go build -C "$root" -trimpath -ldflags "-w" "$@"; } # as install.sh does
if [ -n "${LEDGER:-}" ]; then
	cp "$LEDGER" "$T/ledger"
	cp "${TETHER_PG:?with LEDGER, set TETHER_PG too}" "$T/tether-pg"
else
	build -o "$T/ledger" ./cmd/ledger
	build -o "$T/tether-pg" ./cmd/tether-pg
fi
L=$T/ledger
# Every tool runs in the throwaway folder: a store name a ledger took for a
# relative folder (an old one took postgres:///rt?host=… for the folder
# postgres:/rt?host=…) is made there and removed at exit, never in the
# caller's working tree.
cd "$T"

# A ledger without the PostgreSQL store refuses the URL or takes it for a
# folder name.
Q postgres "CREATE DATABASE probe" >/dev/null
if ! "$L" --ledger "$(dsn probe)" claim probe >/dev/null || [ -e "$T/postgres:" ]; then
	echo "run.sh: this ledger has no PostgreSQL store (ledger --ledger $(dsn probe) claim probe failed or made a folder)" >&2
	exit 3
fi

# --- the two implementations of one cycle -------------------------------

ledger_cycle() { # DB [claim flags...]
	local st id
	st=$(dsn "$1"); shift
	id=$("$L" --ledger "$st" claim bench --owner $$ "$@")
	"$L" --ledger "$st" start "$id"
	"$L" --ledger "$st" finish "$id" --status completed --exit-code 0
}
ledger_run() { "$L" --ledger "$(dsn "$1")" run bench -- true; } # DB
direct_cycle() { # DB: ledger_cycle through tether-pg itself, no hand-off
	local st id
	st=$(dsn "$1")
	id=$("$T/tether-pg" ledger --ledger "$st" claim bench --owner $$)
	"$T/tether-pg" ledger --ledger "$st" start "$id"
	"$T/tether-pg" ledger --ledger "$st" finish "$id" --status completed --exit-code 0
}

# psql's table has what the three statements need, and the store's unique
# index on (job, instant) so that an INSERT pays for one too.
psql_init() { # DB
	Q "$1" "CREATE SCHEMA bench;
		CREATE TABLE bench.executions (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
			job text NOT NULL, instant text, status text NOT NULL, owner_pid integer NOT NULL,
			claimed_at timestamptz NOT NULL, started_at timestamptz, finished_at timestamptz, exit_code integer);
		CREATE UNIQUE INDEX ON bench.executions (job, instant) WHERE status IN ('claimed', 'running', 'completed', 'unknown');
		CREATE INDEX ON bench.executions (job, id);" >/dev/null
}
psql_cycle() { # DB
	local id n
	id=$(Q "$1" "INSERT INTO bench.executions (job, status, owner_pid, claimed_at) VALUES ('bench', 'claimed', $$, now()) RETURNING id")
	n=$(Q "$1" "UPDATE bench.executions SET status = 'running', started_at = now() WHERE id = $id AND status = 'claimed' RETURNING id")
	[ "$n" = "$id" ] || { echo "psql start refused" >&2; exit 1; }
	n=$(Q "$1" "UPDATE bench.executions SET status = 'completed', finished_at = now(), exit_code = 0 WHERE id = $id AND status = 'running' RETURNING id")
	[ "$n" = "$id" ] || { echo "psql finish refused" >&2; exit 1; }
}
for db in a b big empty rt; do psql_init "$db"; ledger_cycle "$db"; done # the store's schema, made on first use

# --- timing helpers -------------------------------------------------------

usec() { local t=${EPOCHREALTIME/./}; echo "${t#0}"; }
timed() { # CMD... → prints microseconds
	local s e
	s=$(usec); "$@"; e=$(usec)
	echo $((e - s))
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a/b}'; }
verdict() { awk -v r="$1" -v t="$2" -v op="$3" 'BEGIN {ok = (op == "<=") ? r <= t : r >= t; print ok ? "met" : "MISSED"}'; }

# --- (a) single cycle, interleaved ----------------------------------------

: >"$T/a.ledger" >"$T/a.psql" >"$T/a.run" >"$T/a.direct"
for ((i = 0; i < N; i++)); do
	if ((i % 2)); then
		timed ledger_run d >>"$T/a.run"
		timed direct_cycle a >>"$T/a.direct"
		timed ledger_cycle a >>"$T/a.ledger"
		timed psql_cycle a >>"$T/a.psql"
	else
		timed psql_cycle a >>"$T/a.psql"
		timed ledger_cycle a >>"$T/a.ledger"
		timed direct_cycle a >>"$T/a.direct"
		timed ledger_run d >>"$T/a.run"
	fi
done
a_l=$(median <"$T/a.ledger")
a_t=$(median <"$T/a.direct")
a_p=$(median <"$T/a.psql")
d_r=$(median <"$T/a.run")

# --- (b) 8 concurrent loops, interleaved rounds ---------------------------

loops() { # CYCLE DB
	local pids=() j k
	for ((j = 0; j < LOOPS; j++)); do
		(for ((k = 0; k < PER_LOOP; k++)); do "$1" "$2"; done) &
		pids+=($!)
	done
	wait "${pids[@]}"
}
: >"$T/b.ledger" >"$T/b.psql"
tools=(ledger psql)
for ((r = 0; r < ROUNDS; r++)); do
	for ((k = 0; k < ${#tools[@]}; k++)); do
		tool=${tools[(r + k) % ${#tools[@]}]}
		us=$(timed loops "${tool}_cycle" b)
		awk -v n=$((LOOPS * PER_LOOP)) -v us="$us" 'BEGIN {printf "%d\n", n * 1e6 / us}' >>"$T/b.$tool"
	done
done
b_l=$(median <"$T/b.ledger")
b_p=$(median <"$T/b.psql")

# --- (c) a big table vs an empty one --------------------------------------

# The store's rows are made by SQL, not by 100,000 claims: finished
# executions of the benchmarked job, each with an instant, as years of a
# cron job leave them. The column list is the store's schema version 1.
echo "filling databases with $BIG executions..." >&2
Q big "INSERT INTO tether.executions (id, job, instant, status, owner_host, owner_pid, claimed_at, started_at, finished_at, exit_code)
	SELECT 'fill-' || i, 'bench', lpad((i::bigint * 60000000000)::text, 20, '0'), 'completed', 'filler', 1,
		now() - interval '1 minute' * ($BIG - i), now(), now(), 0
	FROM generate_series(1, $BIG) AS i;
	ANALYZE tether.executions;" >/dev/null
Q big "INSERT INTO bench.executions (job, instant, status, owner_pid, claimed_at, started_at, finished_at, exit_code)
	SELECT 'bench', i::text, 'completed', 1, now(), now(), now(), 0 FROM generate_series(1, $BIG) AS i;
	ANALYZE bench.executions;" >/dev/null
Q big "CHECKPOINT" >/dev/null
: >"$T/c.le" >"$T/c.lb" >"$T/c.xe" >"$T/c.xb" >"$T/c.pe" >"$T/c.pb"
for ((i = 0; i < N; i++)); do
	inst=$((1700000000 + i))
	if ((i % 2)); then
		timed ledger_cycle big >>"$T/c.lb"
		timed ledger_cycle empty >>"$T/c.le"
		timed ledger_cycle big --exclusive --instant "$inst" >>"$T/c.xb"
		timed ledger_cycle empty --exclusive --instant "$inst" >>"$T/c.xe"
		timed psql_cycle big >>"$T/c.pb"
		timed psql_cycle empty >>"$T/c.pe"
	else
		timed psql_cycle empty >>"$T/c.pe"
		timed psql_cycle big >>"$T/c.pb"
		timed ledger_cycle empty --exclusive --instant "$inst" >>"$T/c.xe"
		timed ledger_cycle big --exclusive --instant "$inst" >>"$T/c.xb"
		timed ledger_cycle empty >>"$T/c.le"
		timed ledger_cycle big >>"$T/c.lb"
	fi
done
c_le=$(median <"$T/c.le") c_lb=$(median <"$T/c.lb")
c_xe=$(median <"$T/c.xe") c_xb=$(median <"$T/c.xb")
c_pe=$(median <"$T/c.pe") c_pb=$(median <"$T/c.pb")

# --- (e) round trips per invocation ---------------------------------------

# Writes on the unix socket, as strace -yy sees them: one per flight of
# messages the client sends, each answered before the next, but for the
# startup packet (no type byte: it starts with its length, \0\0\0…) and a
# Terminate (X), which opens and closes the connection. What remains is
# the round trips the invocation's work took.
round_trips() { # CMD... → round trips after the connection is up
	strace -f -qq -yy -e trace=write,sendto,sendmsg,writev -o "$T/strace.out" "$@" >/dev/null
	grep -E '^[0-9]+ +(write|sendto|sendmsg|writev)\([0-9]+<UNIX' "$T/strace.out" |
		grep -cvE '<UNIX-[A-Z]+:\[[^]]*\]>, "(\\0\\0\\0|X\\0\\0\\0\\4)' || true
}
rt_report=""
if command -v strace >/dev/null; then
	st=$(dsn rt)
	rt_claim=$(round_trips "$L" --ledger "$st" claim bench --owner $$)
	id=$("$L" --ledger "$st" latest bench --field id)
	rt_start=$(round_trips "$L" --ledger "$st" start "$id")
	rt_finish=$(round_trips "$L" --ledger "$st" finish "$id" --status completed --exit-code 0)
	rt_run=$(round_trips "$L" --ledger "$st" run bench -- true)
	rt_psql=$(round_trips "$bindir/psql" -X -q -A -t -d "$st" -c "UPDATE bench.executions SET status = status WHERE false")
	rt_report="claim $rt_claim, start $rt_start, finish $rt_finish, run $rt_run (psql: $rt_psql per statement)"
else
	rt_report="strace not found: not measured"
fi
[ ! -e "$T/postgres:" ] || { echo "run.sh: a ledger made the folder $T/postgres: of a store URL" >&2; exit 3; }

# Statements the server saw per invocation (BEGIN and COMMIT count).
Q postgres "SELECT pg_stat_statements_reset()" >/dev/null
for ((i = 0; i < RT; i++)); do ledger_cycle rt; done
statements=$(Q postgres "SELECT round(sum(calls)::numeric / ($RT * 3), 2) FROM pg_stat_statements
	WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'rt')")
top=$(Q postgres "SELECT round(calls::numeric / $RT, 1) || '× ' || regexp_replace(left(query, 70), '\s+', ' ', 'g')
	FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'rt')
	ORDER BY calls DESC, query LIMIT 12" | sed 's/^/        /')

# --- report ---------------------------------------------------------------

ra=$(ratio "$a_l" "$a_p")
rb=$(ratio "$b_l" "$b_p")
rc=$(ratio "$c_lb" "$c_le")
rx=$(ratio "$c_xb" "$c_xe")
rp=$(ratio "$c_pb" "$c_pe")
rd=$(ratio "$d_r" "$a_p")
cat <<REPORT
ledger on PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') vs psql — $(nproc) cores, $(uname -r), data on $(stat -f -c %T "$T"), unix socket, fsync on
(a) claim→start→finish, 3 processes, median of $N:  ledger ${a_l}us  psql ${a_p}us  ratio $ra (target <= 0.80: $(verdict "$ra" 0.80 "<="))
      tether-pg ledger (no hand-off) ${a_t}us  ratio $(ratio "$a_t" "$a_p")
(b) $LOOPS concurrent loops, median of $ROUNDS rounds:    ledger ${b_l}/s  psql ${b_p}/s  ratio $rb (target >= 1.00: $(verdict "$rb" 1.00 ">="))
(c) cycle with $BIG stored vs empty, median of $N:
      ledger                       ${c_lb}us vs ${c_le}us  ratio $rc (target <= 1.20: $(verdict "$rc" 1.20 "<="))
      ledger --exclusive --instant ${c_xb}us vs ${c_xe}us  ratio $rx (target <= 1.20: $(verdict "$rx" 1.20 "<="))
      psql                         ${c_pb}us vs ${c_pe}us  ratio $rp
(d) ledger run JOB -- true, 1 process, median of $N: ${d_r}us vs (a)'s psql ${a_p}us  ratio $rd
(e) round trips after connecting, per invocation: $rt_report
    statements the server ran per claim/start/finish invocation, mean of $RT cycles: $statements; per cycle:
$top
REPORT
