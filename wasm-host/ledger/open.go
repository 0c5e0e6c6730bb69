package ledger

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tursodatabase/libsql-client-go/libsql"
)

// DefaultURL is the ledger used when LIBSQL_URL is unset: an embedded SQLite
// file under the working directory, so `make run` needs no server.
const DefaultURL = "file:.data/ledger.db"

// ErrClosed is reported for batches sent after Close.
var ErrClosed = errors.New("ledger: executor closed")

// Options are the choices of OpenWith beyond the ledger's URL.
type Options struct {
	// Create lets OpenWith create a file: ledger that does not exist, and
	// its folder. Only `gateway admin migrate` sets it: a command run from
	// another folder, or with a mistyped path, would otherwise work on a new
	// empty ledger beside the real one, and a key it printed would be
	// unknown to the server.
	Create bool
	// Patience is how long a failure known not to have committed anything
	// (the database locked by another host, a server that refused or could
	// not be reached before COMMIT, sqld's "429 Timed out while opening
	// database connection") keeps being retried, with jittered backoff,
	// before a batch fails. Zero keeps the serving default: two retries of
	// a transport failure, and busy retries for as long as the caller's
	// context allows. Operator commands, which have no client waiting on a
	// deadline, are more patient (OperatorPatience).
	Patience time.Duration
	// Wait is how long OpenWith waits for a server that does not answer
	// yet, a sqld starting beside the host (0: Patience). A serving host
	// waits as long as an operator command (OperatorPatience) without
	// taking Patience's longer retries into its requests.
	Wait time.Duration
	// Prepare is SQL the writer compiles into its statement cache as soon
	// as it starts, on an embedded file (a remote server compiles every
	// request's text itself). A host passes the decision path's statements
	// (ledgerq.DecisionStatements), so the first decision after a start does
	// not pay SQLite's compiler: Open returns at once and the compiling
	// happens while the host's modules load. A text that does not compile is
	// skipped here and fails where it is used.
	Prepare []string
	// Merge is SQL whose batches a group may run as one statement with all
	// their rows (merge.go says when, and what the statement must promise):
	// `INSERT … VALUES (?, …, ?) RETURNING …` whose first RETURNING column
	// echoes the first VALUES column. A host passes the decision's
	// reservation and settlement (ledgerq.MergeableStatements). Only a
	// remote server merges. OpenWith refuses a text of another form.
	Merge []string
}

// OperatorPatience is the Patience of operator commands: long enough to
// ride out a sqld restart (about 2 s) or a burst of concurrent commands,
// short enough that a wrong URL fails while the operator is still looking.
const OperatorPatience = 15 * time.Second

// embeddedPragmas are set on every embedded connection. WAL lets a second
// host (or an operator's sqlite3 shell) read while the gateway writes;
// busy_timeout makes SQLite wait for another process's write lock instead of
// failing at once; synchronous=NORMAL and foreign_keys=ON are what sqld runs
// with, so both backends behave alike. NORMAL in WAL mode never corrupts the
// file and loses nothing committed when the process dies (SIGKILL included:
// the commit is in the WAL file); a power cut may drop the commits since the
// last checkpoint, not tear one (schema/ledger.md, "Durability").
var embeddedPragmas = []string{
	"busy_timeout(5000)",
	"journal_mode(WAL)",
	"synchronous(NORMAL)",
	"foreign_keys(1)",
}

// Executor runs ledger batches against one database. It is safe for
// concurrent use; batches are executed one transaction at a time by a single
// writer goroutine (see the package comment). Close it when done.
type Executor struct {
	name     string // the ledger as error messages name it (no query, absolute file path)
	patience time.Duration
	db       *sql.DB
	remote   bool
	hrana    *hranaClient // remote servers: whole batches in one request
	// checkpoints copies the embedded file's WAL into the database beside
	// the writer (checkpoint.go); nil for a remote server.
	checkpoints *checkpointer
	maxGroup    int // batches per transaction; 1 turns group commit off
	pipeline    int // groups in flight on a remote WebSocket when set (tuning); 0: by distance (depth)
	queue       chan *job
	closing     chan struct{} // closed by Close
	stopped     chan struct{} // closed when the writer has returned
	closeMu     sync.Once
	closeErr    error

	counters counters // what Stats reports

	// Owned by the writer goroutine.
	conn      *sql.Conn             // kept between transactions; nil when none
	connIdle  time.Time             // when conn last finished a transaction
	cache     *stmtCache            // conn's prepared statements (embedded); nil when none yet
	args      []driver.NamedValue   // the writer's buffer for a statement's arguments (driverArgs)
	stmtCache int                   // the cache's bound; 0 turns it off
	prepare   []string              // compiled by the writer when it starts (Options.Prepare)
	merge     map[string]*mergeable // Options.Merge, by text
}

// defaultMaxGroup bounds how many queued batches share one transaction. It
// keeps a transaction short (sqld aborts transactions held for 5 s, and
// another host waits for the lock meanwhile; 128 decisions take sqld 5-10
// ms) while still amortising BEGIN, COMMIT and a request's fixed cost
// across a burst: with 128 callers (a host on sqld parks 16 per run slot,
// wasm-host/app) sqld's CPU per decision was 92 µs in groups of 32 and 72
// µs in groups of 128 (BenchmarkDecision/sqld/parallel128).
const defaultMaxGroup = 128

// txTimeout bounds one transaction attempt, whatever the callers' deadlines:
// once a batch has been taken into a transaction it runs to an outcome rather
// than being cut off half way, so its caller learns what happened.
const txTimeout = 10 * time.Second

// Open connects to the existing ledger at url:
//
//	file:PATH            embedded SQLite (through cgo, embedded.go); the
//	                     file must exist (see Options.Create); "" means
//	                     DefaultURL
//	http://HOST:PORT     sqld over Hrana HTTP
//	libsql://HOST:PORT?tls=0  the same, in libSQL's spelling
//	libsql://HOST        Turso or any sqld behind TLS
//
// authToken is sent as a bearer token to remote servers and ignored for
// files. Open checks that the database answers before returning; it does
// not check the schema (RequireMigrated does).
func Open(ctx context.Context, url, authToken string) (*Executor, error) {
	return OpenWith(ctx, url, authToken, Options{})
}

// OpenWith is Open with Options.
func OpenWith(ctx context.Context, url, authToken string, o Options) (*Executor, error) {
	return open(ctx, url, authToken, o, defaultTuning())
}

// tuning is the Executor's knobs. They are fixed in production; benchmarks
// turn them down to measure what each one buys in the same run.
type tuning struct {
	maxGroup  int // batches per transaction; 1 turns group commit off
	stmtCache int // prepared statements kept on an embedded connection; 0 keeps none
	pipeline  int // groups in flight on a remote WebSocket; 0 decides by distance (Executor.depth), 1 never pipelines
}

func defaultTuning() tuning {
	return tuning{maxGroup: defaultMaxGroup, stmtCache: defaultStmtCache}
}

// Remote reports whether url names a ledger on a server (sqld, Turso)
// rather than an embedded file; "" is the default file.
func Remote(url string) bool {
	return url != "" && !strings.HasPrefix(url, "file:")
}

// open is OpenWith with the tuning as a parameter.
func open(ctx context.Context, url, authToken string, o Options, tune tuning) (*Executor, error) {
	if url == "" {
		url = DefaultURL
	}
	var (
		connector driver.Connector
		remote    bool
		err       error
		name      = Redact(url)
	)
	if !Remote(url) {
		var path string
		connector, path, err = embeddedConnector(url, o.Create)
		if path != "" {
			name = "file:" + path
		}
	} else {
		remote = true
		connector, err = remoteConnector(url, authToken)
	}
	if err != nil {
		return nil, fmt.Errorf("ledger %s: %w", name, err)
	}
	db := sql.OpenDB(connector)
	// One connection is all the single writer needs. For a file it keeps
	// every statement on the connection that holds the pragmas; for sqld it
	// is one Hrana stream.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	wait := o.Wait
	if wait == 0 {
		wait = o.Patience
	}
	if err := answers(ctx, db, wait); err != nil {
		db.Close()
		return nil, fmt.Errorf("ledger %s: %w", name, err)
	}
	var merge map[string]*mergeable
	for _, sql := range o.Merge {
		m, err := parseMergeable(sql)
		if err != nil {
			db.Close()
			return nil, err
		}
		if merge == nil {
			merge = map[string]*mergeable{}
		}
		merge[sql] = m
	}
	var hc *hranaClient
	if remote {
		if hc, err = newHranaClient(url, authToken); err != nil {
			db.Close()
			return nil, fmt.Errorf("ledger %s: %w", name, err)
		}
	}
	e := &Executor{
		name:      name,
		patience:  o.Patience,
		hrana:     hc,
		db:        db,
		remote:    remote,
		maxGroup:  max(tune.maxGroup, 1),
		pipeline:  tune.pipeline,
		stmtCache: tune.stmtCache,
		queue:     make(chan *job, 4*defaultMaxGroup),
		closing:   make(chan struct{}),
		stopped:   make(chan struct{}),
		prepare:   o.Prepare,
		merge:     merge,
	}
	if hc != nil {
		hc.trips = &e.counters.roundTrips
	}
	if !remote {
		e.checkpoints = startCheckpointer(connector, e.counters.transactions.Load)
	}
	go e.write()
	return e, nil
}

// Close stops accepting batches, lets the transaction in progress finish,
// and closes the database. Batches still queued fail with ErrClosed.
func (e *Executor) Close() error {
	e.closeMu.Do(func() {
		// The checkpointer's connection closes first: the last one to
		// close is the writer's, which keeps the WAL file (keepWAL).
		if e.checkpoints != nil {
			e.checkpoints.close()
		}
		close(e.closing)
		<-e.stopped
		if e.hrana != nil {
			e.hrana.close()
		}
		e.closeErr = e.db.Close()
	})
	return e.closeErr
}

// answers checks that the database answers a query, retrying a failure
// within patience: the query reads nothing, so trying again is always safe.
// A query, not PingContext: libsql-client-go's HTTP connection does not
// implement driver.Pinger, so a ping would not reach the server.
func answers(ctx context.Context, db *sql.DB, patience time.Duration) error {
	start := time.Now()
	bo := backoff{limit: transientBackoffCap}
	for {
		var one int
		err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one)
		if err == nil || !(isBusy(err) || isTransport(err)) || time.Since(start)+bo.peek() > patience || ctx.Err() != nil {
			return err
		}
		if !sleep(bo.next(), ctx.Done()) {
			return err
		}
	}
}

// Name is the ledger as messages name it: its URL without the query, or
// for a file its absolute path.
func (e *Executor) Name() string { return e.name }

// embeddedConnector prepares a file: URL for the embedded engine
// (embedded.go): it checks that the file exists, or with create makes its
// directory, and adds the pragmas the caller did not set, which the engine
// runs on every connection it opens. It returns the file's absolute path
// ("" for an in-memory database).
func embeddedConnector(url string, create bool) (driver.Connector, string, error) {
	rest := strings.TrimPrefix(url, "file:")
	path, query, _ := strings.Cut(rest, "?")
	if strings.HasPrefix(path, "//") {
		// file:///abs/path; file://host/path names another machine.
		if !strings.HasPrefix(path, "///") {
			return nil, "", fmt.Errorf("%s names a host: write file:/abs/path, file:///abs/path or file:relative/path", url)
		}
		path = strings.TrimPrefix(path, "//")
	}
	q, err := neturl.ParseQuery(query)
	if err != nil {
		return nil, "", err
	}
	if path == "" {
		return nil, "", errors.New("no file path")
	}
	abs := ""
	if path != ":memory:" && q.Get("mode") != "memory" {
		if abs, err = filepath.Abs(path); err != nil {
			return nil, "", err
		}
		if create {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return nil, abs, err
			}
			// The ledger holds e-mail addresses and retained answers: a new
			// file is the owner's alone (SQLite gives its WAL and shared
			// memory files the database file's mode). An empty file is an
			// empty database.
			f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
			switch {
			case err == nil:
				f.Close()
			case !errors.Is(err, os.ErrExist):
				return nil, abs, err
			}
		} else if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil, abs, fmt.Errorf("%w: create it with `bin/gateway admin migrate` (LIBSQL_URL names it; a relative path is read from the working directory)", ErrNoLedger)
		} else if err != nil {
			return nil, abs, err
		}
		path = abs
	}
	// The defaults the URL does not set, then the URL's own.
	set := map[string]bool{}
	for _, p := range q["_pragma"] {
		name, _, _ := strings.Cut(p, "(")
		name, _, _ = strings.Cut(name, "=")
		set[strings.ToLower(strings.TrimSpace(name))] = true
	}
	var pragmas []string
	for _, p := range embeddedPragmas {
		name, _, _ := strings.Cut(p, "(")
		if !set[name] {
			pragmas = append(pragmas, p)
		}
	}
	pragmas = append(pragmas, q["_pragma"]...)
	q.Del("_pragma")
	// SQLite reads the name as a URI: a path's own %, ? and # are escaped.
	dsn := "file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	engineDefaults(q)
	if len(q) > 0 {
		dsn += "?" + q.Encode()
	}
	c, err := embeddedEngine(dsn, pragmas)
	return c, abs, err
}

// ErrNoLedger is reported when a file: ledger does not exist and Options
// did not ask to create it.
var ErrNoLedger = errors.New("does not exist")

// remoteConnector builds a Hrana-over-HTTP connector. libsql-client-go
// refuses a tls query parameter on NewConnector and wants an option instead,
// so ?tls=0/1 is moved from the URL into WithTls.
func remoteConnector(url, authToken string) (driver.Connector, error) {
	u, err := neturl.Parse(url)
	if err != nil {
		return nil, err
	}
	switch u.Scheme {
	case "http", "https", "libsql":
	default:
		return nil, fmt.Errorf("unsupported scheme %q (want file:, http://, https:// or libsql://)", u.Scheme)
	}
	var opts []libsql.Option
	q := u.Query()
	if q.Has("authToken") || q.Has("authtoken") {
		return nil, errors.New("the URL holds an authToken: put the token in LIBSQL_AUTH_TOKEN instead, where it is kept out of logs")
	}
	if q.Has("tls") {
		switch q.Get("tls") {
		case "0":
			opts = append(opts, libsql.WithTls(false))
		case "1":
			opts = append(opts, libsql.WithTls(true))
		default:
			return nil, fmt.Errorf("tls=%q: want 0 or 1", q.Get("tls"))
		}
		q.Del("tls")
		u.RawQuery = q.Encode()
	}
	if authToken != "" {
		opts = append(opts, libsql.WithAuthToken(authToken))
	}
	return libsql.NewConnector(u.String(), opts...)
}

// Redact is a ledger URL as logs and messages may show it: without its
// query (a token put there against advice) and without its user
// information (user:password@, shown as …@: a token may be either part;
// everything before the last @ ahead of the path, so a password holding a
// character the URL syntax reserves is hidden whole too).
func Redact(url string) string {
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok { // file:path
		base, _, _ := strings.Cut(url, "?")
		return base
	}
	authority := len(rest)
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		authority = i
	}
	user := ""
	if at := strings.LastIndexByte(rest[:authority], '@'); at >= 0 {
		rest, user = rest[at+1:], "…@"
	}
	rest, _, _ = strings.Cut(rest, "?")
	rest, _, _ = strings.Cut(rest, "#")
	return scheme + "://" + user + rest
}
