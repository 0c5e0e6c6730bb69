package ledger

import (
	"sync/atomic"
	"time"
)

// Stats counts the work an Executor has done since Open. The cost of some
// operation is the difference of two snapshots (Sub), which is how the
// benchmarks report statements, round trips and transactions per decision.
type Stats struct {
	// Batches is the number of batches that got an outcome, committed or
	// failed.
	Batches int64
	// Transactions is the number of transactions that committed: each
	// BEGIN … COMMIT, and each lone statement run without one. With group
	// commit several batches share one.
	Transactions int64
	// Retries is the number of times a group was run again after an
	// attempt that committed nothing: the database was locked by another
	// host, the connection failed before COMMIT, or a batch's SQL error sent
	// the others round again without it.
	Retries int64
	// Statements is the number of SQL statements the database ran: the
	// steps whose conditions held, BEGIN, COMMIT and ROLLBACK, and on sqld
	// the guard and checkpoint statements of a translated batch.
	Statements int64
	// RoundTrips is the number of requests sent to a remote server (one per
	// Hrana request, one per statement on the interactive path). Always 0
	// for an embedded file.
	RoundTrips int64
	// Prepared is the number of statements SQLite compiled from SQL text on
	// the embedded file; statements found in the writer's cache are not
	// compiled again. Always 0 for a remote server.
	Prepared int64
	// Merged is the number of batches that ran merged with others of the
	// same statement into one (Options.Merge).
	Merged int64
	// Pipelined is the number of groups whose request was written to a
	// remote server while an earlier one was still unanswered (group.go).
	Pipelined int64
}

// Sub returns s minus earlier, field by field.
func (s Stats) Sub(earlier Stats) Stats {
	return Stats{
		Batches:      s.Batches - earlier.Batches,
		Transactions: s.Transactions - earlier.Transactions,
		Retries:      s.Retries - earlier.Retries,
		Statements:   s.Statements - earlier.Statements,
		RoundTrips:   s.RoundTrips - earlier.RoundTrips,
		Prepared:     s.Prepared - earlier.Prepared,
		Merged:       s.Merged - earlier.Merged,
		Pipelined:    s.Pipelined - earlier.Pipelined,
	}
}

// counters are the Executor's Stats as they are updated: the writer adds,
// any goroutine may read.
type counters struct {
	batches, transactions, retries, statements, roundTrips, prepared, merged, pipelined atomic.Int64
}

// Stats returns what the executor has done so far. It is safe to call at
// any time, from any goroutine.
func (e *Executor) Stats() Stats {
	c := &e.counters
	return Stats{
		Batches:      c.batches.Load(),
		Transactions: c.transactions.Load(),
		Retries:      c.retries.Load(),
		Statements:   c.statements.Load(),
		RoundTrips:   c.roundTrips.Load(),
		Prepared:     c.prepared.Load(),
		Merged:       c.merged.Load(),
		Pipelined:    c.pipelined.Load(),
	}
}

// RoundTrip is the shortest WebSocket ping to the ledger's server since
// the executor opened (what decides whether the writer pipelines): 0 for
// an embedded file, a server spoken to over HTTP, or before the first.
func (e *Executor) RoundTrip() time.Duration {
	if e.hrana == nil {
		return 0
	}
	return time.Duration(e.hrana.rtt.Load())
}
