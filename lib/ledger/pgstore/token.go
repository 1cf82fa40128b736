package pgstore

// Fencing tokens. tether.fences holds, per job, the greatest token a claim
// of the job was given; each claim takes the next in its own statement
// (insertClaim), so in its transaction: a claim rolled back gives none
// away but one number, and tokens of a job only grow. Prune and recovery
// never touch the table: a token is never given twice, whatever was
// deleted.
//
// A failover to a standby that had not received the newest claims (their
// commits were acknowledged before they were replicated: asynchronous
// replication) would give their tokens again, as it gives their instants
// again (CONTRACT.md, the README's "Failover"). So the token carries the
// server's timeline, which every promotion increments and which a
// standby's history never lacks: token = (timeline - 1) << 40 | n, n
// counting the job's claims on that timeline from 1. A promoted server's
// first claim of a job jumps past every token of the timelines before it,
// whether it received them or not. The timeline is that of the WAL being
// written now (pg_walfile_name of pg_current_wal_lsn, which every role may
// call: not pg_control_checkpoint's, which lags a promotion until its
// first checkpoint). On timeline 1, a server never promoted, tokens are
// 1, 2, 3, ...; n has 40 bits, a trillion claims of one job per timeline.
// A database restored from a dump (pg_dump, a new cluster on timeline 1)
// keeps tether.fences, and GREATEST keeps its tokens growing.
const nextToken = `tl AS (SELECT (('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint - 1) << 40 AS base),
	tok AS (INSERT INTO tether.fences AS f (job, token) SELECT $3, base + 1 FROM tl
		ON CONFLICT (job) DO UPDATE SET token = GREATEST(f.token + 1, EXCLUDED.token)
		RETURNING token)`
