package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tether-sh/tether/lib/ledger"
)

// SchemaVersion is the version of the schema this package writes and
// reads. A later release that changes the tables migrates from the
// version it finds in tether.schema_version.
const SchemaVersion = 4

// Schema is the name of the PostgreSQL schema the store keeps its tables
// in; Tables lists them. A least-privileged role needs USAGE on the schema
// and SELECT, INSERT, UPDATE, DELETE on the tables (and CREATE on the
// database for the first claim to create them).
const Schema = "tether"

// Tables are the store's tables, schema-qualified.
var Tables = []string{"tether.schema_version", "tether.executions", "tether.job_runs", "tether.fences"}

// schemaLock is the key of the transaction-level advisory lock held while
// the schema is created, so that hosts starting at once do not race on
// CREATE ... IF NOT EXISTS (which is not safe concurrently).
const schemaLock = 0x7465746865720001 // "tether" + 1

// The statuses whose execution holds its (job, instant), from the state
// machine (ledger.BlocksInstant): the partial unique index makes one of
// them per (job, instant) across every host. Its text is also in every
// database made so far, and ON CONFLICT must name the same predicate:
// TestSchemaStatuses keeps it.
var blockingStatuses = sqlStatuses(ledger.BlocksInstant)

// openStatuses are those of an execution not yet terminal, terminalStatuses
// those that end it.
var (
	openStatuses     = sqlStatuses(func(st ledger.Status) bool { return !st.Terminal() })
	terminalStatuses = sqlStatuses(ledger.Status.Terminal)
)

// takenForGood are the terminal statuses that keep their (job, instant)
// taken, even once pruned.
var takenForGood = sqlStatuses(func(st ledger.Status) bool { return st.Terminal() && ledger.BlocksInstant(st) })

// sqlStatuses lists the statuses keep selects as an SQL list, in the
// state machine's order: ('claimed', 'running').
func sqlStatuses(keep func(ledger.Status) bool) string {
	var b strings.Builder
	for _, st := range ledger.Statuses {
		if !keep(st) {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString("'" + string(st) + "'")
	}
	return "(" + b.String() + ")"
}

var createSchema = []string{
	`SELECT pg_advisory_xact_lock(` + fmt.Sprint(schemaLock) + `)`,
	`CREATE SCHEMA IF NOT EXISTS tether`,
	`CREATE TABLE IF NOT EXISTS tether.schema_version (
		version    integer PRIMARY KEY,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`,
	// Version 1's tables; the migrations (schemaMigrations) bring them to
	// SchemaVersion.
	`INSERT INTO tether.schema_version (version) VALUES (1) ON CONFLICT DO NOTHING`,
	// seq orders executions by when they were claimed, whichever host's
	// clock made the id. instant is the fixed-width text form of the
	// scheduled instant (nanoseconds, as the file store keys it). A pruned
	// completed or unknown execution with an instant stays as a row with
	// pruned set, so that its (job, instant) stays taken through the same
	// unique index. lease is the length each renewal extends lease_until
	// by, on the server's clock.
	`CREATE TABLE IF NOT EXISTS tether.executions (
		seq              bigint GENERATED ALWAYS AS IDENTITY,
		id               text PRIMARY KEY,
		job              text NOT NULL,
		source           text,
		instant          text,
		status           text NOT NULL CHECK (status IN ` + sqlStatuses(ledger.Status.Valid) + `),
		fenced_at        timestamptz,
		owner_host       text,
		owner_boot_id    text,
		owner_pidns      bigint,
		owner_pid        integer NOT NULL,
		owner_start      bigint,
		child_pid        integer,
		child_start      bigint,
		claimed_at       timestamptz NOT NULL,
		started_at       timestamptz,
		finished_at      timestamptz,
		exit_code        integer,
		error            text,
		beat_at          timestamptz,
		note             text,
		lease            interval,
		lease_until      timestamptz,
		late_status      text,
		late_exit_code   integer,
		late_error       text,
		late_finished_at timestamptz,
		pruned           boolean NOT NULL DEFAULT false
	)`,
	`CREATE UNIQUE INDEX IF NOT EXISTS executions_instant_once ON tether.executions (job, instant)
		WHERE status IN ` + blockingStatuses,
	`CREATE INDEX IF NOT EXISTS executions_job ON tether.executions (job, seq)`,
	`CREATE INDEX IF NOT EXISTS executions_open ON tether.executions (job)
		WHERE status IN ` + openStatuses,
}

// missingSchema reports whether err says the schema or its tables do not
// exist (yet): nothing was ever claimed in this database.
func missingSchema(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "3F000" || pe.Code == "42P01")
}

// ensureSchema creates the schema and its tables if they do not exist,
// under the advisory lock, and refuses a schema a later release migrated.
func (s *Store) ensureSchema(ctx context.Context) error {
	err := pgx.BeginFunc(ctx, s.conn, func(tx pgx.Tx) error {
		for _, q := range createSchema {
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
		var v int
		if err := tx.QueryRow(ctx, `SELECT max(version) FROM tether.schema_version`).Scan(&v); err != nil {
			return err
		}
		if v > SchemaVersion {
			return fmt.Errorf("the schema %s is version %d, newer than this tether's %d: use a newer tether", Schema, v, SchemaVersion)
		}
		for _, m := range schemaMigrations {
			if m.version <= v {
				continue
			}
			for _, q := range m.statements {
				if _, err := tx.Exec(ctx, q); err != nil {
					return fmt.Errorf("migrating to version %d: %w", m.version, err)
				}
			}
			if _, err := tx.Exec(ctx, `INSERT INTO tether.schema_version (version) VALUES ($1) ON CONFLICT DO NOTHING`, m.version); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("creating the schema %s: %w", Schema, err)
	}
	// Migrated: reads select every column again (a claim that migrated
	// after a read fell back to the older columns must not keep them).
	s.legacy = false
	return nil
}
