package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tursodatabase/libsql-client-go/sqliteparserutils"

	"decisiongateway/schema"
	"decisiongateway/shared/abi"
)

// createMigrations is the bookkeeping table. It is created by the migrator
// rather than by a migration because it must exist before the first one.
const createMigrations = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version    INTEGER PRIMARY KEY,
  name       TEXT NOT NULL,
  applied_at INTEGER NOT NULL DEFAULT (unixepoch())
)`

// Migrate brings the database up to the migrations embedded in package
// schema: each schema/migrations/NNNN_name.sql not yet recorded in
// schema_migrations runs once, in version order.
//
// Each migration is one batch: its first step checks, inside the write
// transaction, that the version is still unrecorded, and every other step
// (the file's statements, then the record) runs only if so. Two hosts that
// start together therefore both call Migrate safely: the second waits for
// the write lock, sees the record, and skips.
func (e *Executor) Migrate(ctx context.Context) error {
	migrations, err := schema.Migrations()
	if err != nil {
		return err
	}
	if err := e.execErr(ctx, &abi.Batch{Steps: []abi.Statement{{SQL: createMigrations}}}); err != nil {
		return fmt.Errorf("ledger: create schema_migrations: %w", err)
	}
	applied, err := e.appliedVersions(ctx)
	if err != nil {
		return err
	}
	for _, m := range migrations {
		if applied[m.Version] {
			continue
		}
		b, err := migrationBatch(m)
		if err != nil {
			return err
		}
		if err := e.execErr(ctx, b); err != nil {
			return fmt.Errorf("ledger: migration %s: %w", m.Name, err)
		}
	}
	return nil
}

// appliedVersions reads schema_migrations once so that a host restarting on
// an up-to-date database costs one read, not one transaction per file.
func (e *Executor) appliedVersions(ctx context.Context) (map[int]bool, error) {
	res := e.Exec(ctx, &abi.Batch{Steps: []abi.Statement{{SQL: "SELECT version FROM schema_migrations"}}})
	if res.Err != "" {
		return nil, fmt.Errorf("ledger: read schema_migrations: %s", res.Err)
	}
	applied := map[int]bool{}
	for _, row := range res.Steps[0].Rows {
		applied[int(row[0].AsInt())] = true
	}
	return applied, nil
}

// migrationBatch turns a migration file into a conditional batch. The file
// is split into statements here, with libsql-client-go's splitter (which
// knows CREATE TRIGGER bodies), because a step holds exactly one statement.
func migrationBatch(m schema.Migration) (*abi.Batch, error) {
	stmts, info := sqliteparserutils.SplitStatement(m.SQL)
	if info.IncompleteCreateTriggerStatement || info.IncompleteMultilineComment {
		return nil, fmt.Errorf("ledger: migration %s: incomplete statement at end of file", m.Name)
	}
	unapplied := []abi.Cond{{Step: 0, Test: abi.Truthy}}
	steps := []abi.Statement{{
		SQL:  "SELECT NOT EXISTS (SELECT 1 FROM schema_migrations WHERE version = ?)",
		Args: []abi.Value{abi.Int64(int64(m.Version))},
	}}
	for _, s := range stmts {
		steps = append(steps, abi.Statement{SQL: s, When: unapplied})
	}
	steps = append(steps, abi.Statement{
		SQL:  "INSERT INTO schema_migrations (version, name) VALUES (?, ?)",
		Args: []abi.Value{abi.Int64(int64(m.Version)), abi.String(m.Name)},
		When: unapplied,
	})
	return &abi.Batch{Steps: steps}, nil
}

func (e *Executor) execErr(ctx context.Context, b *abi.Batch) error {
	if res := e.Exec(ctx, b); res.Err != "" {
		return errors.New(res.Err)
	}
	return nil
}

// Pending returns the names of the migrations embedded in this build that
// the ledger has not recorded, in version order: all of them for a ledger
// that was never migrated. It only reads, so a readiness check may call it.
func (e *Executor) Pending(ctx context.Context) ([]string, error) {
	migrations, err := schema.Migrations()
	if err != nil {
		return nil, err
	}
	// Two lone reads rather than one batch: a lone statement runs without
	// BEGIN IMMEDIATE, so checking never takes the write lock.
	res := e.Exec(ctx, &abi.Batch{Steps: []abi.Statement{{SQL: "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"}}})
	if res.Err != "" {
		return nil, errors.New(res.Err)
	}
	applied := map[int]bool{}
	if res.Steps[0].Rows[0][0].AsInt() > 0 {
		if applied, err = e.appliedVersions(ctx); err != nil {
			return nil, err
		}
	}
	var pending []string
	for _, m := range migrations {
		if !applied[m.Version] {
			pending = append(pending, m.Name)
		}
	}
	return pending, nil
}

// NotMigratedError is RequireMigrated's refusal.
type NotMigratedError struct {
	Ledger  string   // the ledger's name (Executor.Name)
	Pending []string // the migrations it lacks
}

func (e *NotMigratedError) Error() string {
	return fmt.Sprintf("ledger %s is not migrated (%s not applied): run `bin/gateway admin migrate` with the same LIBSQL_URL first",
		e.Ledger, strings.Join(e.Pending, ", "))
}

// RequireMigrated fails with a *NotMigratedError unless the ledger has every
// migration this build embeds. Only `gateway admin migrate` changes the
// schema; serving, and every other command, refuse a ledger it has not
// prepared instead of creating tables in whatever database the URL names.
// A ledger with migrations this build does not know (a newer build
// migrated it) is accepted: migrations only add.
func (e *Executor) RequireMigrated(ctx context.Context) error {
	pending, err := e.Pending(ctx)
	if err != nil {
		return fmt.Errorf("ledger %s: %w", e.name, err)
	}
	if len(pending) > 0 {
		return &NotMigratedError{Ledger: e.name, Pending: pending}
	}
	return nil
}
