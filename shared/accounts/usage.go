package accounts

// Usage window of spec §2.7.
const (
	usageDays     = 30
	usageRequests = 50
	day           = 86400
)

// DayUsage is one UTC day of an account's decisions.
type DayUsage struct {
	Day       int64 // unix day number (unix seconds / 86400)
	Requests  int64 // decision attempts that reserved credits
	Succeeded int64
	Failed    int64
	Pending   int64
	Credits   int64 // credits charged (successes; failures are refunded)
	Questions int64
}

// RequestUsage is one decision attempt (a row of requests).
type RequestUsage struct {
	ID         string
	CreatedAt  int64
	FinishedAt int64 // 0 while pending
	Source     string
	KeyID      string // "" for the playground
	KeyName    string
	KeyPrefix  string
	Model      string // the effective model it was sent with
	// ResolvedModel is the model the upstream answered with; "" when
	// unknown (pending, failed, or the answer named none).
	ResolvedModel string
	Questions     int64
	State         string
	Status        int64 // 0 while pending
	ErrorCode     string
	Cost          int64
	Charged       int64
	InputTokens   int64 // -1 when unknown
	OutputTokens  int64 // -1 when unknown
}

// Usage is an account's usage summary.
type Usage struct {
	Balance  int64
	From     int64      // first second of the window (00:00 UTC, 29 days before today)
	Days     []DayUsage // usageDays entries, oldest first, days without requests zero
	Requests []RequestUsage
}

// Usage reads the balance, the per-day totals of the latest 30 UTC days
// (today included) and the latest 50 requests created in that window, in
// one batch so the three agree with each other.
func (s *Store) Usage(account string) (Usage, error) {
	now := s.now()
	today := now / day
	from := (today - usageDays + 1) * day
	res, err := s.run(
		st("SELECT balance FROM accounts WHERE id = ?", str(account)),
		st(`SELECT created_at / 86400, COUNT(*), SUM(state = 'succeeded'), SUM(state = 'failed'), SUM(state = 'pending'), SUM(charged), SUM(questions)
FROM requests WHERE account_id = ? AND created_at >= ? GROUP BY created_at / 86400`, str(account), num(from)),
		st(`SELECT r.id, r.created_at, COALESCE(r.finished_at, 0), r.source, COALESCE(r.key_id, ''), COALESCE(k.name, ''), COALESCE(k.prefix, ''),
r.model, r.questions, r.state, COALESCE(r.status, 0), COALESCE(r.error_code, ''), r.cost, r.charged, COALESCE(r.input_tokens, -1), COALESCE(r.output_tokens, -1),
COALESCE(r.resolved_model, '')
FROM requests r LEFT JOIN api_keys k ON k.id = r.key_id
WHERE r.account_id = ? AND r.created_at >= ? ORDER BY r.created_at DESC, r.rowid DESC LIMIT ?`, str(account), num(from), num(usageRequests)),
	)
	if err != nil {
		return Usage{}, err
	}
	if len(res[0].Rows) == 0 {
		return Usage{}, ErrNoAccount
	}
	u := Usage{Balance: res[0].First().AsInt(), From: from, Days: make([]DayUsage, usageDays)}
	for i := range u.Days {
		u.Days[i].Day = from/day + int64(i)
	}
	for _, r := range res[1].Rows {
		i := r[0].AsInt() - from/day
		if i < 0 || i >= usageDays {
			continue // created in the future by a host with a fast clock
		}
		u.Days[i] = DayUsage{Day: r[0].AsInt(), Requests: r[1].AsInt(), Succeeded: r[2].AsInt(), Failed: r[3].AsInt(),
			Pending: r[4].AsInt(), Credits: r[5].AsInt(), Questions: r[6].AsInt()}
	}
	u.Requests = make([]RequestUsage, 0, len(res[2].Rows))
	for _, r := range res[2].Rows {
		u.Requests = append(u.Requests, RequestUsage{
			ID: r[0].AsString(), CreatedAt: r[1].AsInt(), FinishedAt: r[2].AsInt(), Source: r[3].AsString(),
			KeyID: r[4].AsString(), KeyName: r[5].AsString(), KeyPrefix: r[6].AsString(), Model: r[7].AsString(),
			Questions: r[8].AsInt(), State: r[9].AsString(), Status: r[10].AsInt(), ErrorCode: r[11].AsString(),
			Cost: r[12].AsInt(), Charged: r[13].AsInt(), InputTokens: r[14].AsInt(), OutputTokens: r[15].AsInt(),
			ResolvedModel: r[16].AsString(),
		})
	}
	return u, nil
}
