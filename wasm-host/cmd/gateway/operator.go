package main

import (
	"decisiongateway/shared/keys"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/accounts"
)

// The read-only and administrative views an operator needs without signing
// in as a user: every account, one account's money and keys, revoking a
// key, exporting usage. They read the ledger directly, in one batch per
// view so its parts agree, and never read a secret: keys are shown by id,
// name and display prefix, which is all the ledger holds of them besides
// a hash.

const accountsHelp = `Columns: ACCOUNT, EMAIL, VERIFIED (date, or - if never), BALANCE (credits),
KEYS (active keys), CREATED. --json writes one JSON object a line instead:
{"id","email","verifiedAt","balance","activeKeys","createdAt"}, times as
RFC 3339 UTC ("" when never).
`

const accountHelp = `Prints the account, its balance beside the sum of its credit entries by kind
(welcome, grant, reserve, refund; the two must be equal, or the command
fails), and every key: id, name, display prefix, state (active or revoked),
created, last used, revoked. --json writes one JSON object.
`

// usageColumns are the columns of `admin usage`, in order: one row per
// decision attempt that reserved credits (table requests, schema/ledger.md).
var usageColumns = []string{
	"request_id", "created_at", "finished_at", "account_id", "email", "source", "key_id", "key_name", "key_prefix",
	"model", "questions", "state", "status", "error_code", "cost", "charged", "input_tokens", "output_tokens", "resolved_model",
}

var usageHelp = `One row per decision attempt that reserved credits, oldest first, as CSV with
a header line (default) or JSON lines (--format jsonl, the same names as keys):

  ` + strings.Join(usageColumns, ",") + `

Times are RFC 3339 UTC; finished_at, status and the token counts are empty
(null in JSON) while unknown or pending. charged is what the attempt cost
the account in the end (cost when it succeeded, 0 when it failed and was
refunded). --since and --until take 2006-01-02 or an RFC 3339 time: since
inclusive, until exclusive. --account keeps one account's rows.
`

func rfc3339(unix int64) string {
	if unix == 0 {
		return ""
	}
	return time.Unix(unix, 0).UTC().Format(time.RFC3339)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// query runs one read batch.
func (op *operator) query(steps ...abi.Statement) ([]abi.StepResult, error) {
	res := op.led.Exec(op.ctx, &abi.Batch{Steps: steps})
	if res.Err != "" {
		return nil, errors.New("ledger: " + res.Err)
	}
	return res.Steps, nil
}

type accountRow struct {
	ID         string `json:"id"`
	Email      string `json:"email"`
	VerifiedAt string `json:"verifiedAt"`
	Balance    int64  `json:"balance"`
	ActiveKeys int64  `json:"activeKeys"`
	CreatedAt  string `json:"createdAt"`
}

// listAccounts is `admin accounts [--json]`.
func listAccounts(op *operator, args []string) error {
	pos, flags, err := parseFlags(args, []string{"json"})
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return wrong("admin accounts takes no arguments, got %q", pos)
	}
	if err := op.open(); err != nil {
		return err
	}
	steps, err := op.query(abi.Statement{SQL: `SELECT a.id, COALESCE(a.email, ''), COALESCE(a.verified_at, 0), a.balance,
(SELECT COUNT(*) FROM api_keys k WHERE k.account_id = a.id AND k.revoked_at IS NULL), a.created_at
FROM accounts a ORDER BY a.created_at, a.id`})
	if err != nil {
		return err
	}
	rows := make([]accountRow, 0, len(steps[0].Rows))
	for _, r := range steps[0].Rows {
		rows = append(rows, accountRow{ID: r[0].AsString(), Email: r[1].AsString(), VerifiedAt: rfc3339(r[2].AsInt()),
			Balance: r[3].AsInt(), ActiveKeys: r[4].AsInt(), CreatedAt: rfc3339(r[5].AsInt())})
	}
	if _, asJSON := flags["json"]; asJSON {
		enc := json.NewEncoder(op.out)
		for _, r := range rows {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(op.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ACCOUNT\tEMAIL\tVERIFIED\tBALANCE\tKEYS\tCREATED")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", r.ID, r.Email, orDash(r.VerifiedAt), r.Balance, r.ActiveKeys, r.CreatedAt)
	}
	return tw.Flush()
}

type keyRow struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Prefix     string `json:"prefix"`
	State      string `json:"state"`
	CreatedAt  string `json:"createdAt"`
	LastUsedAt string `json:"lastUsedAt"`
	RevokedAt  string `json:"revokedAt"`
}

type accountView struct {
	accountRow
	// Entries is the sum of the account's credit entries by kind; their
	// total is EntriesSum, which equals Balance (schema/ledger.md).
	Entries    map[string]int64 `json:"entries"`
	EntriesSum int64            `json:"entriesSum"`
	Keys       []keyRow         `json:"keys"`
}

// showAccount is `admin account EMAIL|ACCOUNT_ID [--json]`.
func showAccount(op *operator, args []string) error {
	pos, flags, err := parseFlags(args, []string{"json"})
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return wrong("admin account takes one EMAIL or ACCOUNT_ID, got %q", pos)
	}
	if err := notASecret(pos[0]); err != nil {
		return err
	}
	if err := op.open(); err != nil {
		return err
	}
	a, err := op.account(pos[0])
	if errors.Is(err, accounts.ErrNoAccount) {
		return fmt.Errorf("no account for %q", pos[0])
	}
	if err != nil {
		return err
	}
	id := abi.String(a.ID)
	steps, err := op.query(
		abi.Statement{SQL: "SELECT COALESCE(email, ''), COALESCE(verified_at, 0), balance, created_at FROM accounts WHERE id = ?", Args: []abi.Value{id}},
		abi.Statement{SQL: "SELECT kind, SUM(delta) FROM credit_entries WHERE account_id = ? GROUP BY kind ORDER BY kind", Args: []abi.Value{id}},
		abi.Statement{SQL: `SELECT id, name, prefix, created_at, COALESCE(last_used_at, 0), COALESCE(revoked_at, 0)
FROM api_keys WHERE account_id = ? ORDER BY created_at DESC, id`, Args: []abi.Value{id}},
	)
	if err != nil {
		return err
	}
	r := steps[0].Rows[0]
	v := accountView{Entries: map[string]int64{}, Keys: []keyRow{}}
	v.accountRow = accountRow{ID: a.ID, Email: r[0].AsString(), VerifiedAt: rfc3339(r[1].AsInt()), Balance: r[2].AsInt(), CreatedAt: rfc3339(r[3].AsInt())}
	for _, e := range steps[1].Rows {
		v.Entries[e[0].AsString()] = e[1].AsInt()
		v.EntriesSum += e[1].AsInt()
	}
	for _, k := range steps[2].Rows {
		kr := keyRow{ID: k[0].AsString(), Name: k[1].AsString(), Prefix: k[2].AsString(), State: "active",
			CreatedAt: rfc3339(k[3].AsInt()), LastUsedAt: rfc3339(k[4].AsInt()), RevokedAt: rfc3339(k[5].AsInt())}
		if kr.RevokedAt != "" {
			kr.State = "revoked"
		} else {
			v.ActiveKeys++
		}
		v.Keys = append(v.Keys, kr)
	}
	if _, asJSON := flags["json"]; asJSON {
		if err := json.NewEncoder(op.out).Encode(v); err != nil {
			return err
		}
	} else {
		printAccount(op.out, &v)
	}
	if v.EntriesSum != v.Balance {
		return fmt.Errorf("account %s: balance %d differs from the sum of its credit entries %d: the ledger's invariant is broken (schema/ledger.md)", a.ID, v.Balance, v.EntriesSum)
	}
	return nil
}

func printAccount(out io.Writer, v *accountView) {
	fmt.Fprintf(out, "account   %s\nemail     %s\ncreated   %s\nverified  %s\n", v.ID, v.Email, v.CreatedAt, orDash(v.VerifiedAt))
	var parts []string
	for _, kind := range []string{"welcome", "grant", "reserve", "refund"} {
		if n, ok := v.Entries[kind]; ok {
			parts = append(parts, fmt.Sprintf("%s %+d", kind, n))
		}
	}
	fmt.Fprintf(out, "balance   %d (credit entries: %d = %s)\n", v.Balance, v.EntriesSum, orDash(strings.Join(parts, ", ")))
	fmt.Fprintf(out, "keys      %d active, %d revoked\n\n", v.ActiveKeys, int64(len(v.Keys))-v.ActiveKeys)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tNAME\tPREFIX\tSTATE\tCREATED\tLAST USED\tREVOKED")
	for _, k := range v.Keys {
		fmt.Fprintf(tw, "%s\t%q\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, k.Prefix, k.State, k.CreatedAt, orDash(k.LastUsedAt), orDash(k.RevokedAt))
	}
	tw.Flush()
}

// revokeKey is `admin revoke KEY_ID`. It revokes through
// accounts.RevokeKey, as the console does, after finding the key's
// account; a key already revoked is reported and left as it is.
func revokeKey(op *operator, args []string) error {
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		return wrong("admin revoke takes one KEY_ID, got %q", args)
	}
	if err := notASecret(args[0]); err != nil {
		return err
	}
	if err := op.open(); err != nil {
		return err
	}
	steps, err := op.query(abi.Statement{SQL: "SELECT account_id, name, prefix, COALESCE(revoked_at, 0) FROM api_keys WHERE id = ?", Args: []abi.Value{abi.String(args[0])}})
	if err != nil {
		return err
	}
	if len(steps[0].Rows) == 0 {
		return fmt.Errorf("no key %q (key ids start with key_; `gateway admin account EMAIL` lists an account's keys)", args[0])
	}
	r := steps[0].Rows[0]
	account, name, prefix := r[0].AsString(), r[1].AsString(), r[2].AsString()
	if at := r[3].AsInt(); at != 0 {
		fmt.Fprintf(op.out, "key %s %q prefix %s of account %s was already revoked at %s\n", args[0], name, prefix, account, rfc3339(at))
		return nil
	}
	err = op.store().RevokeKey(account, args[0])
	if errors.Is(err, accounts.ErrKeyNotFound) {
		// Revoked by someone else between the read and the write.
		fmt.Fprintf(op.out, "key %s %q prefix %s of account %s was already revoked\n", args[0], name, prefix, account)
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(op.out, "revoked key %s %q prefix %s of account %s\n", args[0], name, prefix, account)
	return nil
}

// usagePage is how many rows `admin usage` reads per batch: the export
// streams, so its memory does not grow with the ledger.
var usagePage int64 = 500

// exportUsage is `admin usage`.
func exportUsage(op *operator, args []string) error {
	pos, flags, err := parseFlags(args, nil, "format", "account", "since", "until")
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return wrong("admin usage takes only flags, got %q", pos)
	}
	format := flags["format"]
	if format == "" {
		format = "csv"
	}
	if format != "csv" && format != "jsonl" {
		return wrong("--format %q: want csv or jsonl", format)
	}
	since, until := int64(0), int64(1)<<62
	for name, dst := range map[string]*int64{"since": &since, "until": &until} {
		if v, ok := flags[name]; ok {
			t, err := parseWhen(v)
			if err != nil {
				return wrong("--%s %q: want 2006-01-02 or an RFC 3339 time", name, v)
			}
			*dst = t.Unix()
		}
	}
	if err := notASecret(flags["account"]); err != nil {
		return err
	}
	if err := op.open(); err != nil {
		return err
	}
	where, filter := "", []abi.Value{abi.Int64(since), abi.Int64(until)}
	if ref, ok := flags["account"]; ok {
		a, err := op.account(ref)
		if errors.Is(err, accounts.ErrNoAccount) {
			return fmt.Errorf("no account for %q", ref)
		}
		if err != nil {
			return err
		}
		where, filter = " AND r.account_id = ?", append(filter, abi.String(a.ID))
	}
	w := newUsageWriter(op.out, format)
	for after := int64(0); ; {
		steps, err := op.query(abi.Statement{SQL: `SELECT r.rowid, r.id, r.created_at, COALESCE(r.finished_at, 0), r.account_id, COALESCE(a.email, ''), r.source,
COALESCE(r.key_id, ''), COALESCE(k.name, ''), COALESCE(k.prefix, ''), r.model, r.questions, r.state, r.status, COALESCE(r.error_code, ''),
r.cost, r.charged, r.input_tokens, r.output_tokens, r.resolved_model
FROM requests r JOIN accounts a ON a.id = r.account_id LEFT JOIN api_keys k ON k.id = r.key_id
WHERE r.rowid > ? AND r.created_at >= ? AND r.created_at < ?` + where + ` ORDER BY r.rowid LIMIT ?`,
			Args: append(append([]abi.Value{abi.Int64(after)}, filter...), abi.Int64(usagePage))})
		if err != nil {
			return err
		}
		for _, r := range steps[0].Rows {
			if err := w.row(r[1:]); err != nil {
				return err
			}
			after = r[0].AsInt()
		}
		if int64(len(steps[0].Rows)) < usagePage {
			return w.flush()
		}
	}
}

func parseWhen(v string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	return time.Parse(time.RFC3339, v)
}

// usageWriter writes usage rows as CSV or JSON lines. Each row holds the
// values of usageColumns in order; the time columns are unix seconds.
type usageWriter struct {
	format string
	csv    *csv.Writer
	json   *json.Encoder
}

func newUsageWriter(out io.Writer, format string) *usageWriter {
	w := &usageWriter{format: format}
	if format == "csv" {
		w.csv = csv.NewWriter(out)
		w.csv.Write(usageColumns)
	} else {
		w.json = json.NewEncoder(out)
	}
	return w
}

// usageTimes and usageNullable name the columns written as times, and
// those empty (null) when the ledger holds NULL.
var (
	usageTimes    = map[string]bool{"created_at": true, "finished_at": true}
	usageNullable = map[string]bool{"status": true, "input_tokens": true, "output_tokens": true, "resolved_model": true}
)

func (w *usageWriter) row(vals []abi.Value) error {
	if w.csv != nil {
		rec := make([]string, len(usageColumns))
		for i, col := range usageColumns {
			rec[i] = usageText(col, vals[i])
		}
		return w.csv.Write(rec)
	}
	obj := make(map[string]any, len(usageColumns))
	for i, col := range usageColumns {
		switch v := vals[i]; {
		case usageTimes[col]:
			obj[col] = rfc3339(v.AsInt())
		case usageNullable[col] && v.Kind == abi.Null:
			obj[col] = nil
		case v.Kind == abi.Integer:
			obj[col] = v.AsInt()
		default:
			obj[col] = v.AsString()
		}
	}
	return w.json.Encode(obj)
}

func usageText(col string, v abi.Value) string {
	switch {
	case usageTimes[col]:
		return rfc3339(v.AsInt())
	case v.Kind == abi.Null:
		return ""
	case v.Kind == abi.Integer:
		return strconv.FormatInt(v.AsInt(), 10)
	}
	return v.AsString()
}

func (w *usageWriter) flush() error {
	if w.csv != nil {
		w.csv.Flush()
		return w.csv.Error()
	}
	return nil
}

// notASecret refuses an argument that is a secret (an API key, a session or
// a sign-in link: dgk_, dgs_, dgl_) where an id or an address belongs,
// without repeating it: messages and shell histories are no place for it.
func notASecret(arg string) error {
	for _, kind := range []string{keys.APIKey, keys.Session, keys.SignIn} {
		if _, ok := keys.Parse(kind, arg); ok { // checksummed: an address that merely starts so passes
			return wrong("that argument is a secret (%s…), not an id or an e-mail address: name a key by its id (key_…; `gateway admin account EMAIL` lists them)", kind)
		}
	}
	return nil
}
