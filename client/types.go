package client

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
)

// Request is a decision request (spec §2.1). Decide also takes the body as
// raw JSON, which keeps numbers and key order exactly as written.
type Request struct {
	Model     string              `json:"model,omitempty"` // empty: the deployment's default
	State     any                 `json:"state"`           // string, object, array or nil; always sent
	Questions map[string]Question `json:"questions"`       // 1 to 32
}

// Question is one named question (spec §2.2). Criteria is a map of option
// name to description for "choice", an ordered slice of level descriptions
// for "score", and nil or {"true": …, "false": …} for "noul".
type Question struct {
	Type         string `json:"type"`
	Instructions any    `json:"instructions,omitempty"`
	Criteria     any    `json:"criteria,omitempty"`
}

// Decision is a successful answer with what its headers say.
type Decision struct {
	Model   string            // resolved by the upstream; record it for reproducibility
	Answers map[string]Answer // one per question
	Usage   *Usage            // nil when the upstream gave none

	RequestID      string // X-Request-Id; a replay keeps the original's
	Credits        *int64 // X-Service-Credits; nil: unknown (not zero); 0 on a replay
	Replayed       bool   // X-Idempotency-Replayed: true
	Mode           string // X-Service-Response-Mode
	IdempotencyKey string // the key the answering attempt used
	Attempts       int    // requests sent, this one included
	Header         http.Header
	Raw            json.RawMessage // the body as received, extension fields included
}

// Answer is one question's answer (spec §2.4). Which fields are set
// depends on Type; a number the answer lacks is nil, never a made-up zero.
type Answer struct {
	Type          string             `json:"type"`
	Choice        string             `json:"choice,omitempty"`
	Score         *float64           `json:"score,omitempty"`
	Noul          *float64           `json:"noul,omitempty"`
	Probabilities map[string]float64 `json:"probabilities,omitempty"`
	Confidence    *float64           `json:"confidence,omitempty"`
	Legend        map[string]string  `json:"legend,omitempty"`
}

// Usage is the upstream's token count; a count it did not give is nil, and
// so is one that is not a whole number from 0 to 2^63-1 (the gateway passes
// the upstream's text on, so 120.0 or 1.2e2 may come for 120).
type Usage struct {
	InputTokens  *int64 `json:"input_tokens"`
	OutputTokens *int64 `json:"output_tokens"`
}

// UnmarshalJSON reads the counts in any JSON spelling and never fails: the
// usage is optional, and a decision is not refused over it.
func (u *Usage) UnmarshalJSON(b []byte) error {
	var raw struct {
		In  json.Number `json:"input_tokens"`
		Out json.Number `json:"output_tokens"`
	}
	if json.Unmarshal(b, &raw) != nil {
		return nil
	}
	u.InputTokens, u.OutputTokens = count(raw.In), count(raw.Out)
	return nil
}

// count is n as a token count, or nil.
func count(n json.Number) *int64 {
	if v, err := strconv.ParseInt(string(n), 10, 64); err == nil && v >= 0 {
		return &v
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || f < 0 || f >= 1<<63 || f != math.Trunc(f) {
		return nil
	}
	v := int64(f)
	return &v
}

// Model is an entry of the model list (spec §2.5). Name, Description and
// ReleaseDate are set when the entry has them as strings; Raw keeps the
// entry, extension fields included.
type Model struct {
	Name, Description, ReleaseDate string
	Raw                            json.RawMessage
}

// UnmarshalJSON tolerates any member types, since the spec leaves them open.
func (m *Model) UnmarshalJSON(b []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	for name, dst := range map[string]*string{"name": &m.Name, "description": &m.Description, "release_date": &m.ReleaseDate} {
		json.Unmarshal(fields[name], dst) // a non-string leaves it empty
	}
	m.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// required names the member each answer type must carry (spec §2.4), the
// ones a caller reads.
var required = map[string]func(a *Answer) bool{
	"choice": func(a *Answer) bool { return a.Choice != "" && a.Probabilities != nil },
	"score":  func(a *Answer) bool { return a.Score != nil && a.Probabilities != nil },
	"noul":   func(a *Answer) bool { return a.Noul != nil },
}

// decode reads the body into d and checks what a caller relies on (spec
// §9.6): an answer for every question of the request, of its type, with
// that type's fields. Unknown members are tolerated.
func (d *Decision) decode(request []byte) error {
	var body struct {
		Model   string            `json:"model"`
		Answers map[string]Answer `json:"answers"`
		Usage   *Usage            `json:"usage"`
	}
	if err := json.Unmarshal(d.Raw, &body); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidAnswer, err)
	}
	d.Model, d.Answers, d.Usage = body.Model, body.Answers, body.Usage
	var asked struct {
		Questions map[string]struct {
			Type string `json:"type"`
		} `json:"questions"`
	}
	json.Unmarshal(request, &asked) // the gateway accepted it, so it parses
	for name, q := range asked.Questions {
		a, ok := d.Answers[name]
		valid, known := required[q.Type]
		if !ok || !known || a.Type != q.Type || !valid(&a) {
			return fmt.Errorf("%w: question %q has no valid %s answer", ErrInvalidAnswer, name, q.Type)
		}
	}
	return nil
}
