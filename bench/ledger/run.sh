#!/usr/bin/env bash
# Benchmark: ledger against sqlite3 (WAL, synchronous=FULL, a conditional-
# UPDATE executions table), in one interleaved run:
#
#   (a) one durable claim→start→finish cycle as 3 process invocations: median
#   (b) 8 concurrent loops of such cycles: throughput (cycles/s), median of rounds
#   (c) the cycle's cost in a store holding $BIG executions vs an empty one
#   (d) the one-shot cycle `ledger run JOB -- true` (claim, start with the
#       payload recorded, run it, finish: one process) against (a)'s sqlite3
#   (e) durable flushes (fsync + fdatasync, counted by strace) of `ledger run`
#       of an existing job and of claim + start + finish
#   (f) disk per execution in the store holding $BIG (du), and sqlite3's
#   (g) at $BIG stored: `list --json` and `prune --keep 10` (time, max RSS)
#       against sqlite3's SELECT and DELETE of the same rows; and
#       `list --json` of (h)'s $JOBS jobs against a 1-job store's
#   (h) at $BIG stored vs a 1-job store: `list --status running` and
#       `ledger status` (every job's summary); `show` of a finished
#       execution (found through its job's index) and of an absent id;
#       at $JOBS jobs stored vs 1: `ledger run` (its claim of an id it
#       chose) and `show` of a finished execution of the last job
#
# (a) and (b) also run bench/ledger/floor: the same files, links, renames and
# flushes as ledger's claim/start/finish from a minimal Go program (no
# parsing, no JSON, no checks), bare and with the initialisation of every
# package ledger links: the protocol before job logs, for
# comparison. They also run floor with FLOOR_PROTOCOL=log: the cycle of
# lib/ledger/filestore's job logs (bench/ledger/floor/log.go): what a Go
# ledger keeping that write protocol cannot beat here.
# (d) runs floor's `run` beside it (bench/ledger/floor/run.go): that
# protocol's one-shot cycle, the command held at its exec as lib/runner
# holds it, bare and with ledger's package inits.
#
# Usage: bench/ledger/run.sh   (env: N=cycles per measurement, ROUNDS, PER_LOOP, BIG, JOBS;
#        CYCLES_ONLY=1 stops after (a) and (b) and reports those)
# Needs go, sqlite3, strace, GNU time (/usr/bin/time) and bash ≥ 5
# ($EPOCHREALTIME); eatmydata, if present, only speeds up filling the big
# store (not measured). Leaves nothing behind.
set -euo pipefail

N=${N:-150}             # cycles per tool in (a) and per store in (c)
ROUNDS=${ROUNDS:-8}     # rounds of (b) per tool (each tool goes first in turn)
PER_LOOP=${PER_LOOP:-20} # cycles per loop in (b)
LOOPS=8
BIG=${BIG:-20000}
JOBS=${JOBS:-200}        # jobs in (h)'s store of many jobs

root=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/ledger-bench.XXXXXX")
trap 'rm -rf "$T"' EXIT
command -v sqlite3 >/dev/null || { echo "run.sh: sqlite3 not found" >&2; exit 3; }
command -v strace >/dev/null || { echo "run.sh: strace not found" >&2; exit 3; }
[ -x /usr/bin/time ] || { echo "run.sh: GNU time (/usr/bin/time) not found" >&2; exit 3; }
nosync=(); command -v eatmydata >/dev/null && nosync=(eatmydata)

build() { CGO_ENABLED=0 go build -C "$root" -trimpath -ldflags "-w" "$@"; } # as install.sh does
build -o "$T/ledger" ./cmd/ledger
build -o "$T/fill" ./bench/ledger/fill
build -o "$T/floor" ./bench/ledger/floor
build -tags floorinits -o "$T/floor-inits" ./bench/ledger/floor
L=$T/ledger

# --- the two implementations of one cycle -------------------------------

ledger_cycle() { # STORE [claim flags...]
	local st=$1; shift
	cycle_with "$L" "$st" "$@"
}
ledger_run() { "$L" --ledger "$1" run bench -- true; } # STORE
floor_cycle() { cycle_with "$T/floor" "$@"; }
floor_inits_cycle() { cycle_with "$T/floor-inits" "$@"; }
floor_log_cycle() { FLOOR_PROTOCOL=log cycle_with "$T/floor" "$@"; }
# The log design's one-shot cycle (bench/ledger/floor/run.go), bare and
# with the initialisation of every package ledger links.
floor_log_run() { FLOOR_PROTOCOL=log "$T/floor" --ledger "$1" run bench -- true; } # STORE
floor_inits_log_run() { FLOOR_PROTOCOL=log "$T/floor-inits" --ledger "$1" run bench -- true; } # STORE
cycle_with() { # BINARY STORE [claim flags...]
	local bin=$1 st=$2; shift 2
	local id
	id=$("$bin" --ledger "$st" claim bench --owner $$ "$@")
	"$bin" --ledger "$st" start "$id"
	"$bin" --ledger "$st" finish "$id" --status completed --exit-code 0
}

sq() { sqlite3 -cmd ".timeout 10000" "$1" "PRAGMA synchronous=FULL; $2"; }

sq_init() { # DB
	sqlite3 "$1" "PRAGMA journal_mode=WAL;
		CREATE TABLE executions(id INTEGER PRIMARY KEY, job TEXT NOT NULL, status TEXT NOT NULL,
			owner_pid INTEGER, claimed_at TEXT, started_at TEXT, finished_at TEXT, exit_code INTEGER);
		CREATE INDEX executions_job ON executions(job, status);" >/dev/null
}

now_sql="strftime('%Y-%m-%dT%H:%M:%fZ','now')"
sqlite_cycle() { # DB
	local db=$1 id n
	id=$(sq "$db" "INSERT INTO executions(job,status,owner_pid,claimed_at) VALUES('bench','claimed',$$,$now_sql) RETURNING id;")
	n=$(sq "$db" "UPDATE executions SET status='running', started_at=$now_sql WHERE id=$id AND status='claimed'; SELECT changes();")
	[ "$n" = 1 ] || { echo "sqlite start refused" >&2; exit 1; }
	n=$(sq "$db" "UPDATE executions SET status='completed', finished_at=$now_sql, exit_code=0 WHERE id=$id AND status='running'; SELECT changes();")
	[ "$n" = 1 ] || { echo "sqlite finish refused" >&2; exit 1; }
}

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

# Right after many files were deleted (a previous run's cleanup of its BIG
# stores: 60,000 files) sqlite3, which creates and deletes its -wal and -shm
# on every call, took 13.7 ms a cycle here for the better part of a minute,
# against 7.5 ms on a quiet file system; ledger, which creates one file per
# claim, much less. So first wait until sqlite3's cycle stops getting
# cheaper: the medians of the last three probes (5 cycles each, 2 s apart)
# within 15% of each other, or 3 minutes.
settle() {
	local db=$T/settle.db probes=() k
	sq_init "$db"
	for ((k = 0; k < 90; k++)); do
		probes+=("$(for j in 1 2 3 4 5; do timed sqlite_cycle "$db"; done | median)")
		if ((${#probes[@]} >= 3)) && awk -v a="${probes[-1]}" -v b="${probes[-2]}" -v c="${probes[-3]}" \
			'BEGIN {lo = a; hi = a; if (b < lo) lo = b; if (c < lo) lo = c; if (b > hi) hi = b; if (c > hi) hi = c; exit !(hi <= lo * 1.15)}'; then
			break
		fi
		sleep 2
	done
	echo "sqlite3 cycle while settling (us): ${probes[*]}" >&2
	rm -f "$db"*
	# The probes' own -wal/-shm deletions: ext4 without a journal skips
	# inodes freed in the last 5-10 s when it creates a file.
	sleep 10
}
settle

# --- (a) single cycle, interleaved ----------------------------------------

sq_init "$T/a.db"
: >"$T/a.ledger" >"$T/a.sqlite" >"$T/a.floor" >"$T/a.floor-inits" >"$T/a.floor-log" >"$T/a.run"
: >"$T/a.floor-run" >"$T/a.floor-inits-run"
for ((i = 0; i < N; i++)); do
	if ((i % 2)); then
		timed ledger_run "$T/d-store" >>"$T/a.run"
		timed floor_log_run "$T/d-floor" >>"$T/a.floor-run"
		timed floor_inits_log_run "$T/d-floor-inits" >>"$T/a.floor-inits-run"
		timed ledger_cycle "$T/a-store" >>"$T/a.ledger"
		timed floor_cycle "$T/a-floor" >>"$T/a.floor"
		timed sqlite_cycle "$T/a.db" >>"$T/a.sqlite"
		timed floor_inits_cycle "$T/a-floor-inits" >>"$T/a.floor-inits"
		timed floor_log_cycle "$T/a-floor-log" >>"$T/a.floor-log"
	else
		timed floor_log_cycle "$T/a-floor-log" >>"$T/a.floor-log"
		timed sqlite_cycle "$T/a.db" >>"$T/a.sqlite"
		timed floor_inits_cycle "$T/a-floor-inits" >>"$T/a.floor-inits"
		timed ledger_cycle "$T/a-store" >>"$T/a.ledger"
		timed floor_cycle "$T/a-floor" >>"$T/a.floor"
		timed floor_inits_log_run "$T/d-floor-inits" >>"$T/a.floor-inits-run"
		timed floor_log_run "$T/d-floor" >>"$T/a.floor-run"
		timed ledger_run "$T/d-store" >>"$T/a.run"
	fi
done
a_l=$(median <"$T/a.ledger")
a_s=$(median <"$T/a.sqlite")
a_f=$(median <"$T/a.floor")
a_fi=$(median <"$T/a.floor-inits")
a_fl=$(median <"$T/a.floor-log")
d_r=$(median <"$T/a.run")
d_fr=$(median <"$T/a.floor-run")
d_fir=$(median <"$T/a.floor-inits-run")

# --- (b) 8 concurrent loops, interleaved rounds ---------------------------

loops() { # CYCLE TARGET
	local pids=() j k
	for ((j = 0; j < LOOPS; j++)); do
		(for ((k = 0; k < PER_LOOP; k++)); do "$1" "$2"; done) &
		pids+=($!)
	done
	wait "${pids[@]}"
}
sq_init "$T/b.db"
: >"$T/b.ledger" >"$T/b.sqlite" >"$T/b.floor" >"$T/b.floor-inits" >"$T/b.floor-log"
tools=(ledger sqlite floor floor-inits floor-log)
for ((r = 0; r < ROUNDS; r++)); do
	# A different tool goes first each round.
	for ((k = 0; k < ${#tools[@]}; k++)); do
		tool=${tools[(r + k) % ${#tools[@]}]}
		case $tool in
		ledger) us=$(timed loops ledger_cycle "$T/b-store") ;;
		sqlite) us=$(timed loops sqlite_cycle "$T/b.db") ;;
		floor) us=$(timed loops floor_cycle "$T/b-floor") ;;
		floor-inits) us=$(timed loops floor_inits_cycle "$T/b-floor-inits") ;;
		floor-log) us=$(timed loops floor_log_cycle "$T/b-floor-log") ;;
		esac
		awk -v n=$((LOOPS * PER_LOOP)) -v us="$us" 'BEGIN {printf "%d\n", n * 1e6 / us}' >>"$T/b.$tool"
	done
done
b_l=$(median <"$T/b.ledger")
b_s=$(median <"$T/b.sqlite")
b_f=$(median <"$T/b.floor")
b_fi=$(median <"$T/b.floor-inits")
b_fl=$(median <"$T/b.floor-log")

# The cycle lines of the report, (a) and (b).
cycles_report() {
	local ra rb
	ra=$(ratio "$a_l" "$a_s") rb=$(ratio "$b_l" "$b_s")
	cat <<CYCLES
(a) claim→start→finish, 3 processes, median of $N:  ledger ${a_l}us  sqlite3 ${a_s}us  ratio $ra (target <= 0.60: $(verdict "$ra" 0.60 "<="))
      floor ${a_f}us ratio $(ratio "$a_f" "$a_s"), floor with ledger's package inits ${a_fi}us ratio $(ratio "$a_fi" "$a_s")
      floor of the log design ${a_fl}us ratio $(ratio "$a_fl" "$a_s")
(b) $LOOPS concurrent loops, median of $ROUNDS rounds:    ledger ${b_l}/s  sqlite3 ${b_s}/s  ratio $rb (target >= 1.00: $(verdict "$rb" 1.00 ">="))
      floor ${b_f}/s ratio $(ratio "$b_f" "$b_s"), floor with ledger's package inits ${b_fi}/s ratio $(ratio "$b_fi" "$b_s")
      floor of the log design ${b_fl}/s ratio $(ratio "$b_fl" "$b_s")
CYCLES
}
if [ -n "${CYCLES_ONLY:-}" ]; then
	echo "ledger vs sqlite3 $(sqlite3 --version | cut -d' ' -f1) — $(nproc) cores, $(uname -r), store on $(stat -f -c %T "$T")"
	cycles_report
	exit 0
fi

# --- (c) big store vs empty store -----------------------------------------

echo "filling stores with $BIG executions..." >&2
"${nosync[@]}" "$T/fill" "$T/c-big" bench "$BIG"
sq_init "$T/c-big.db"
sq "$T/c-big.db" "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < $BIG)
	INSERT INTO executions(job,status,owner_pid,claimed_at,started_at,finished_at,exit_code)
	SELECT 'bench','completed',1,$now_sql,$now_sql,$now_sql,0 FROM n;" >/dev/null
sq_init "$T/c-empty.db"
: >"$T/c.le" >"$T/c.lb" >"$T/c.se" >"$T/c.sb" >"$T/c.xe" >"$T/c.xb"
for ((i = 0; i < N; i++)); do
	if ((i % 2)); then
		timed ledger_cycle "$T/c-big" >>"$T/c.lb"
		timed ledger_cycle "$T/c-empty" >>"$T/c.le"
		timed ledger_cycle "$T/c-big" --exclusive --instant "$((1700000000 + i))" >>"$T/c.xb"
		timed ledger_cycle "$T/c-empty" --exclusive --instant "$((1700000000 + i))" >>"$T/c.xe"
		timed sqlite_cycle "$T/c-big.db" >>"$T/c.sb"
		timed sqlite_cycle "$T/c-empty.db" >>"$T/c.se"
	else
		timed sqlite_cycle "$T/c-empty.db" >>"$T/c.se"
		timed sqlite_cycle "$T/c-big.db" >>"$T/c.sb"
		timed ledger_cycle "$T/c-empty" --exclusive --instant "$((1700000000 + i))" >>"$T/c.xe"
		timed ledger_cycle "$T/c-big" --exclusive --instant "$((1700000000 + i))" >>"$T/c.xb"
		timed ledger_cycle "$T/c-empty" >>"$T/c.le"
		timed ledger_cycle "$T/c-big" >>"$T/c.lb"
	fi
done
c_le=$(median <"$T/c.le") c_lb=$(median <"$T/c.lb")
c_xe=$(median <"$T/c.xe") c_xb=$(median <"$T/c.xb")
c_se=$(median <"$T/c.se") c_sb=$(median <"$T/c.sb")

# --- (e) durable flushes --------------------------------------------------

flushes() { # CMD... → the fsync/fdatasync calls it made
	strace -f -qq -e trace=fsync,fdatasync -o "$T/e.trace" "$@" >"$T/e.out"
	grep -c 'sync(' "$T/e.trace" || true
}
ledger_run "$T/e-store"
e_run=$(flushes "$L" --ledger "$T/e-store" run bench -- true)
e_c=$(flushes "$L" --ledger "$T/e-store" claim bench)
e_id=$(cat "$T/e.out")
e_s=$(flushes "$L" --ledger "$T/e-store" start "$e_id")
e_f=$(flushes "$L" --ledger "$T/e-store" finish "$e_id" --status completed --exit-code 0)
e_csf=$((e_c + e_s + e_f))
export FLOOR_PROTOCOL=log
floor_log_cycle "$T/e-floor-log" >/dev/null # the job's log exists
e_lc=$(flushes "$T/floor" --ledger "$T/e-floor-log" claim bench)
e_lid=$(cat "$T/e.out")
e_ls=$(flushes "$T/floor" --ledger "$T/e-floor-log" start "$e_lid")
e_lf=$(flushes "$T/floor" --ledger "$T/e-floor-log" finish "$e_lid")
unset FLOOR_PROTOCOL

# --- (f) disk per execution -----------------------------------------------

"$L" --ledger "$T/c-big" list --field id >"$T/f.ids"
f_n=$(wc -l <"$T/f.ids")
f_l=$(($(du -sk "$T/c-big" | cut -f1) * 1024 / f_n))
f_s=$(($(du -sk "$T/c-big.db" | cut -f1) * 1024 / $(sq "$T/c-big.db" "SELECT count(*) FROM executions;")))

# --- (h) live listing and summaries: $BIG stored vs 1 -----------------------

quiet() { "$@" >/dev/null; }
absent() { ! "$@" >/dev/null 2>&1; } # CMD... fails, as a show of no such id
"$L" --ledger "$T/h-one" run bench -- true
h_one=$("$L" --ledger "$T/h-one" latest bench --field id)
h_big=$(sed -n "$((f_n / 2))p" "$T/f.ids") # a finished one, mid-log
# A store of $JOBS jobs, one finished execution each: ledger run's claim
# (an id of its own choosing) and show of the last job's execution (job
# names padded, so that the last made is the last in name order, the
# order in which a finished id's job is searched for).
for ((j = 1; j <= JOBS; j++)); do "${nosync[@]}" "$T/fill" "$T/h-jobs" "$(printf 'job%06d' "$j")" 1; done
h_last=$(printf 'job%06d' "$JOBS")
"$L" --ledger "$T/h-jobs" run "$h_last" -- true
h_jobs=$("$L" --ledger "$T/h-jobs" latest "$h_last" --field id)
for st in "$T/h-one" "$T/c-big"; do # one running execution in each
	"$L" --ledger "$st" claim live --owner $$ >"$T/h.id"
	"$L" --ledger "$st" start "$(cat "$T/h.id")"
done
: >"$T/h.lo" >"$T/h.lb" >"$T/h.so" >"$T/h.sb" >"$T/h.fo" >"$T/h.fb" >"$T/h.ao" >"$T/h.ab"
: >"$T/h.ro" >"$T/h.rj" >"$T/h.jo" >"$T/h.jj"
for ((i = 0; i < N; i++)); do
	timed quiet "$L" --ledger "$T/h-jobs" run "$h_last" -- true >>"$T/h.rj"
	timed quiet "$L" --ledger "$T/h-one" run bench -- true >>"$T/h.ro"
	timed quiet "$L" --ledger "$T/h-one" show "$h_one" --field status >>"$T/h.jo"
	timed quiet "$L" --ledger "$T/h-jobs" show "$h_jobs" --field status >>"$T/h.jj"
	timed quiet "$L" --ledger "$T/h-one" list --status running >>"$T/h.lo"
	timed quiet "$L" --ledger "$T/c-big" list --status running >>"$T/h.lb"
	timed quiet "$L" --ledger "$T/c-big" status >>"$T/h.sb"
	timed quiet "$L" --ledger "$T/h-one" status >>"$T/h.so"
	timed quiet "$L" --ledger "$T/h-one" show "$h_one" --field status >>"$T/h.fo"
	timed quiet "$L" --ledger "$T/c-big" show "$h_big" --field status >>"$T/h.fb"
	timed absent "$L" --ledger "$T/c-big" show 0000000000000-absent >>"$T/h.ab"
	timed absent "$L" --ledger "$T/h-one" show 0000000000000-absent >>"$T/h.ao"
done
h_lo=$(median <"$T/h.lo") h_lb=$(median <"$T/h.lb")
h_so=$(median <"$T/h.so") h_sb=$(median <"$T/h.sb")
h_fo=$(median <"$T/h.fo") h_fb=$(median <"$T/h.fb")
h_ao=$(median <"$T/h.ao") h_ab=$(median <"$T/h.ab")
h_ro=$(median <"$T/h.ro") h_rj=$(median <"$T/h.rj")
h_jo=$(median <"$T/h.jo") h_jj=$(median <"$T/h.jj")

# --- (g) list and prune at $BIG ---------------------------------------------

rss_timed() { # OUT CMD... → appends "us kib" to OUT
	local out=$1 s e; shift
	s=$(usec); /usr/bin/time -f %M -o "$T/g.rss" "$@" >/dev/null; e=$(usec)
	echo "$((e - s)) $(tail -1 "$T/g.rss")" >>"$out"
}
: >"$T/g.ll" >"$T/g.sl"
for ((i = 0; i < 5; i++)); do
	rss_timed "$T/g.ll" "$L" --ledger "$T/c-big" list --json
	rss_timed "$T/g.sl" sqlite3 "$T/c-big.db" "SELECT * FROM executions;"
done
g_ll=$(cut -d' ' -f1 "$T/g.ll" | median) g_llm=$(cut -d' ' -f2 "$T/g.ll" | sort -n | tail -1)
g_sl=$(cut -d' ' -f1 "$T/g.sl" | median) g_slm=$(cut -d' ' -f2 "$T/g.sl" | sort -n | tail -1)
: >"$T/g.lp" >"$T/g.sp"
rss_timed "$T/g.lp" "$L" --ledger "$T/c-big" prune --keep 10
rss_timed "$T/g.sp" sqlite3 -cmd ".timeout 10000" "$T/c-big.db" "PRAGMA synchronous=FULL; DELETE FROM executions WHERE job='bench' AND id NOT IN (SELECT id FROM executions WHERE job='bench' ORDER BY id DESC LIMIT 10);"
read -r g_lp g_lpm <"$T/g.lp"
read -r g_sp g_spm <"$T/g.sp"
# list --json of many jobs: what it holds per job (each job's log is open)
: >"$T/g.lj" >"$T/g.lo"
for ((i = 0; i < 5; i++)); do
	rss_timed "$T/g.lj" "$L" --ledger "$T/h-jobs" list --json
	rss_timed "$T/g.lo" "$L" --ledger "$T/h-one" list --json
done
g_lj=$(cut -d' ' -f1 "$T/g.lj" | median) g_ljm=$(cut -d' ' -f2 "$T/g.lj" | sort -n | tail -1)
g_lo=$(cut -d' ' -f1 "$T/g.lo" | median) g_lom=$(cut -d' ' -f2 "$T/g.lo" | sort -n | tail -1)

# --- report ---------------------------------------------------------------

rc=$(ratio "$c_lb" "$c_le")
rx=$(ratio "$c_xb" "$c_xe")
rs=$(ratio "$c_sb" "$c_se")
rd=$(ratio "$d_r" "$a_s")
cat <<REPORT
ledger vs sqlite3 $(sqlite3 --version | cut -d' ' -f1) — $(nproc) cores, $(uname -r), store on $(stat -f -c %T "$T")
$(cycles_report)
(c) cycle with $BIG stored vs empty, median of $N:
      ledger                      ${c_lb}us vs ${c_le}us  ratio $rc (target <= 1.30: $(verdict "$rc" 1.30 "<="))
      ledger --exclusive --instant ${c_xb}us vs ${c_xe}us  ratio $rx (target <= 1.30: $(verdict "$rx" 1.30 "<="))
      sqlite3                     ${c_sb}us vs ${c_se}us  ratio $rs
(d) ledger run JOB -- true, 1 process, median of $N: ${d_r}us vs (a)'s sqlite3 ${a_s}us  ratio $rd (target <= 0.50: $(verdict "$rd" 0.50 "<="))
      floor of the log design's run ${d_fr}us ratio $(ratio "$d_fr" "$a_s"), with ledger's package inits ${d_fir}us ratio $(ratio "$d_fir" "$a_s")
(e) durable flushes: ledger run of an existing job $e_run (target <= 3: $(verdict "$e_run" 3 "<=")),
      claim+start+finish $e_csf = $e_c+$e_s+$e_f (target <= 4: $(verdict "$e_csf" 4 "<=")),
      floor of the log design: claim+start+finish $((e_lc + e_ls + e_lf)) = $e_lc+$e_ls+$e_lf
(f) disk per execution at $f_n stored: ledger ${f_l} B, sqlite3 ${f_s} B (target <= 1024: $(verdict "$f_l" 1024 "<="))
(g) at $f_n stored, list --json: ledger ${g_ll}us ${g_llm} KiB, sqlite3 SELECT ${g_sl}us ${g_slm} KiB
      ratio $(ratio "$g_ll" "$g_sl") (target <= 3: $(verdict "$(ratio "$g_ll" "$g_sl")" 3 "<=")), RSS (target <= 32768 KiB: $(verdict "$g_llm" 32768 "<="))
    prune --keep 10: ledger ${g_lp}us ${g_lpm} KiB, sqlite3 DELETE ${g_sp}us ${g_spm} KiB
      ratio $(ratio "$g_lp" "$g_sp") (target <= 3: $(verdict "$(ratio "$g_lp" "$g_sp")" 3 "<=")), RSS (target <= 32768 KiB: $(verdict "$g_lpm" 32768 "<="))
    list --json of $JOBS jobs vs 1 job: ${g_lj}us ${g_ljm} KiB vs ${g_lo}us ${g_lom} KiB: $(((g_ljm - g_lom) * 1024 / JOBS)) B more per job (reported)
(h) $BIG stored vs 1, median of $N: list --status running ${h_lb}us vs ${h_lo}us ratio $(ratio "$h_lb" "$h_lo") (target <= 2: $(verdict "$(ratio "$h_lb" "$h_lo")" 2 "<="))
      ledger status ${h_sb}us vs ${h_so}us ratio $(ratio "$h_sb" "$h_so") (target <= 2: $(verdict "$(ratio "$h_sb" "$h_so")" 2 "<="))
      show of a finished one ${h_fb}us vs ${h_fo}us ratio $(ratio "$h_fb" "$h_fo") (flat, as (c): target <= 1.30: $(verdict "$(ratio "$h_fb" "$h_fo")" 1.30 "<="))
      show of an absent id ${h_ab}us vs ${h_ao}us ratio $(ratio "$h_ab" "$h_ao") (target <= 1.30: $(verdict "$(ratio "$h_ab" "$h_ao")" 1.30 "<="))
    $JOBS jobs stored vs 1, median of $N: ledger run ${h_rj}us vs ${h_ro}us ratio $(ratio "$h_rj" "$h_ro") (flat: target <= 1.30: $(verdict "$(ratio "$h_rj" "$h_ro")" 1.30 "<="))
      show of the last job's finished one ${h_jj}us vs ${h_jo}us ratio $(ratio "$h_jj" "$h_jo") (reported: a finished id's job is searched for)
REPORT
