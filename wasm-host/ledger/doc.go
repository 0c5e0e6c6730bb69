// Package ledger is the host side of the `ledger` import: it runs the SQL
// batches that route functions send, against the libSQL database named by
// LIBSQL_URL (an embedded file, a sqld server, or Turso).
//
// The contract is the one in schema/abi.md, "Ledger batches": a batch is
// atomic, its steps run in order, a step runs only when all its conditions
// hold, and on any SQL error nothing is committed and only the error is
// returned.
//
// Why it is built the way it is:
//
//   - One writer per Executor. Every batch takes the database's write lock
//     (BEGIN IMMEDIATE), and sqld answers a second concurrent writer with
//     "database is locked" or makes it wait, so running batches in parallel
//     from one host buys nothing but contention. A single goroutine owns the
//     writing and callers hand it their batches.
//   - Group commit. While one transaction runs, new batches queue up; the
//     writer then runs all queued batches (up to maxGroup) in one transaction
//     and one COMMIT. Each batch still sees the effects of the batches before
//     it, exactly as if they had committed one by one. If one batch hits an
//     SQL error, the transaction is rolled back, that batch alone gets the
//     error, and the others are run again without it, so a failing batch
//     never changes another's outcome. The writer yields once before
//     committing a short group, because the callers it just woke would
//     otherwise reach the queue one at a time (see gather).
//   - A batch of one statement, alone in its group, runs without BEGIN and
//     COMMIT: SQLite makes a single statement atomic by itself, and over HTTP
//     each of those is a round trip to the server.
//   - One request per transaction on a remote server. database/sql sends
//     each statement of an interactive transaction as its own HTTP request,
//     so a 14-step batch cost 16 round trips. For sqld and Turso the writer
//     instead translates the whole group into one Hrana batch, with the
//     conditions turned into guard statements that fail when a test is
//     false (see translate.go), and sends it on a kept stream: one Hrana
//     message on a WebSocket, or one HTTP pipeline request where the server
//     refuses the upgrade (hranaws.go says why and what it saves). Batches
//     the translation cannot express exactly still run interactively. The
//     messages are written and read without reflection (hranajson.go):
//     encoding/json was half of the writer's CPU per request.
//   - Requests in flight on a far server's WebSocket. When pings put the
//     server a millisecond or more away (another zone, a Turso region),
//     the writer writes the next group's request without waiting for the
//     answer to the one before, up to four (group.go, pipelineDepth), so a
//     batch waits for its own round trip and not also for the group ahead.
//     sqld runs a stream's requests in order. A request written behind
//     another is always a transaction, so that nothing of it can run inside
//     one the request ahead left open; a group that did not succeed is
//     settled after the answers behind it are in, so its retries run with
//     nothing in flight, as they would without pipelining (land). On a
//     server nearby the writer waits for each answer: its groups grow
//     meanwhile, and sqld's fixed cost per request is most of what a
//     decision costs it. Measured with loadbench -ledger-rtt:
//     wasm-host/loadbench/MEASUREMENTS.md.
//   - Merged statements on a remote server. sqld compiles every statement
//     of every request, and compiling is most of what a decision costs it,
//     so a group's batches that are each the same one statement
//     (Options.Merge: the decision's reservation and its settlement) run
//     as that statement once with all their rows (merge.go).
//   - Prepared statements on the embedded file. Compiling SQL cost about as
//     much as running it, and the routes send the same few texts over and
//     over, so the writer keeps each statement compiled on its connection
//     (a bounded cache by SQL text, stmtcache.go) and runs them at the
//     driver level inside Conn.Raw: database/sql would compile every
//     statement again and start a goroutine per query. The driver also
//     starts one per statement whose context can be done, so the writer
//     gives it a context that never is (busy_timeout bounds its waits):
//     BenchmarkDecision/embedded/parallel8 146-189 -> 114-146 us of CPU per
//     decision. A remote server gets the text every time anyway, so it has
//     no cache.
//   - Checkpoints beside the writer. On the embedded file a second
//     connection copies the WAL into the database (PRAGMA
//     wal_checkpoint(PASSIVE)) every 50 ms after commits, so the writer no
//     longer stalls every queued batch inside the commit that crosses
//     SQLite's automatic checkpoint (checkpoint.go).
//   - SQLite set for one goroutine per connection. Connections open
//     without their mutex, SQLite keeps no memory statistics (a global
//     mutex per allocation) and gives each connection 500 lookaside slots
//     (embedded.go), and a commit reaches the WAL as one write instead of
//     two per page (walwrite.go): together 57-69 -> 38-40 us of CPU per
//     decision (BenchmarkDecision/embedded/parallel8).
//   - Retries. SQLITE_BUSY ("database is locked") from another host, before
//     anything committed, is retried with jittered exponential backoff for as
//     long as the caller's context allows.
//   - Query or Exec. A driver gives either a statement's rows or its
//     changes count, not both, so the executor decides from the SQL text:
//     statements that return rows (SELECT, VALUES, PRAGMA, EXPLAIN,
//     WITH … SELECT, and any … RETURNING) use Query, the rest use Exec. A
//     RETURNING statement reports its row count as rows affected, which is
//     what SQLite changed; a SELECT reports 0.
//
// Stats counts what reached the database (statements, transactions,
// requests to a server, compilations); BenchmarkDecision reports them per
// decision.
//
// Values come back as the SQLite storage class they have: integer, real,
// text, blob or null. One exception comes from the drivers, not from SQLite:
// text stored in a column declared DATE, DATETIME or TIMESTAMP is parsed into
// a time by both drivers and comes back as text in the form
// "2006-01-02 15:04:05.999999999" (UTC) rather than byte for byte. Ledger
// tables should store times as INTEGER unix seconds or in TEXT columns.
package ledger
