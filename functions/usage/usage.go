// Package usage is GET /api/service/usage (spec §2.7, §4.7): the signed-in
// account's balance, per-day usage of the latest 30 UTC days and its latest
// 50 requests. Field names are documented in schema/usage.md.
package usage

import (
	"time"

	"decisiongateway/console/gate"
	"decisiongateway/shared/abi"
	"decisiongateway/shared/accounts"
	"decisiongateway/shared/jsonw"
	"decisiongateway/shared/platform"
	"decisiongateway/shared/policy"
)

// Handle answers the usage summary of the session's account.
func Handle(env *platform.Env, req *abi.Request) abi.Response {
	g, resp, ok := gate.Check(env, req, false)
	if !ok {
		return resp
	}
	u, err := g.Store.Usage(g.Session.AccountID)
	if err != nil {
		return gate.Failure(err)
	}
	var w jsonw.Writer
	w.Open('{')
	w.FieldInt("balance", u.Balance)
	w.Key("window")
	w.Open('{')
	w.FieldString("from", date(u.Days[0].Day))
	w.FieldString("to", date(u.Days[len(u.Days)-1].Day))
	w.FieldInt("days", int64(len(u.Days)))
	w.Close('}')
	w.Key("days")
	w.Open('[')
	for _, d := range u.Days {
		w.Open('{')
		w.FieldString("date", date(d.Day))
		w.FieldInt("requests", d.Requests)
		w.FieldInt("succeeded", d.Succeeded)
		w.FieldInt("failed", d.Failed)
		w.FieldInt("pending", d.Pending)
		w.FieldInt("credits", d.Credits)
		w.FieldInt("questions", d.Questions)
		w.Close('}')
	}
	w.Close(']')
	w.Key("requests")
	w.Open('[')
	for i := range u.Requests {
		writeRequest(&w, &u.Requests[i])
	}
	w.Close(']')
	w.Close('}')
	return policy.JSON(200, w.B)
}

func writeRequest(w *jsonw.Writer, r *accounts.RequestUsage) {
	w.Open('{')
	w.FieldString("id", r.ID)
	w.FieldInt("createdAt", r.CreatedAt)
	intOrNull(w, "finishedAt", r.FinishedAt, r.FinishedAt == 0)
	w.FieldString("source", r.Source)
	stringOrNull(w, "keyId", r.KeyID)
	stringOrNull(w, "keyName", r.KeyName)
	stringOrNull(w, "keyPrefix", r.KeyPrefix)
	w.FieldString("model", r.Model)
	stringOrNull(w, "resolvedModel", r.ResolvedModel)
	w.FieldInt("questions", r.Questions)
	w.FieldString("state", r.State)
	intOrNull(w, "status", r.Status, r.Status == 0)
	stringOrNull(w, "errorCode", r.ErrorCode)
	w.FieldInt("cost", r.Cost)
	w.FieldInt("charged", r.Charged)
	intOrNull(w, "inputTokens", r.InputTokens, r.InputTokens < 0)
	intOrNull(w, "outputTokens", r.OutputTokens, r.OutputTokens < 0)
	w.Close('}')
}

func intOrNull(w *jsonw.Writer, k string, v int64, null bool) {
	w.Key(k)
	if null {
		w.Null()
	} else {
		w.Int(v)
	}
}

func stringOrNull(w *jsonw.Writer, k, v string) {
	w.Key(k)
	if v == "" {
		w.Null()
	} else {
		w.String(v)
	}
}

// date formats a unix day number as YYYY-MM-DD (UTC).
func date(day int64) string { return time.Unix(day*86400, 0).UTC().Format("2006-01-02") }
