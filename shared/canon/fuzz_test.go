package canon

import (
	"encoding/json"
	"testing"

	"decisiongateway/shared/validate"
)

// FuzzCanonicalFormIsStable checks, for every body the validator accepts,
// that the canonical form is valid JSON, is a fixed point (canonicalising it
// again changes nothing), does not depend on the Encoder's history, and is
// the same from the validator's tree (ValidateTree, AppendTree); and that
// its priced length is never more than the body's own, nor than the
// canonical form's.
//
//	go test -run='^$' -fuzz=FuzzCanonicalFormIsStable -fuzztime=30s ./shared/canon
func FuzzCanonicalFormIsStable(f *testing.F) {
	for _, s := range []string{
		`{"state":null,"questions":{"q":{"type":"noul"}}}`,
		`{"model":"m","state":[1e2,-0,0.5e-7,123456789e20,"\u00e9\ud83d\ude00\n"],"questions":{"b":{"type":"noul"},"a":{"type":"score","criteria":[1,2]}}}`,
		`{"state":{"z":{"\u0000":1e-400,"":[]}},"questions":{"q":{"type":"choice","criteria":{"x":{}}}},"ext":true}`,
	} {
		f.Add([]byte(s))
	}
	var v validate.Validator
	var reused Encoder
	f.Fuzz(func(t *testing.T, body []byte) {
		if _, err := v.Validate(body); err != nil {
			return
		}
		once, err := reused.Append(nil, body, "")
		if err != nil {
			t.Fatalf("validated body not canonicalised: %v", err)
		}
		// With the body's own model (""), nothing is inserted: the price
		// counts no byte the client did not send.
		if p := reused.PricedLen(); p > len(body) || p > len(once) || p <= 0 {
			t.Fatalf("priced length %d for a %d-byte body, canonical %d bytes: %s", p, len(body), len(once), once)
		}
		once, err = reused.Append(nil, body, "model-latest")
		if err != nil {
			t.Fatalf("validated body not canonicalised: %v", err)
		}
		if !json.Valid(once) {
			t.Fatalf("canonical form is not JSON: %s", once)
		}
		_, tree, verr := v.ValidateTree(body)
		if verr != nil {
			t.Fatalf("ValidateTree refused what Validate accepted: %v", verr)
		}
		if fromTree, err := reused.AppendTree(nil, tree, "model-latest"); err != nil || string(fromTree) != string(once) {
			t.Fatalf("AppendTree differs from Append (%v):\n%s\n%s", err, fromTree, once)
		}
		fresh, _ := Append(nil, body, "model-latest")
		twice, err := Append(nil, once, "model-latest")
		if err != nil || string(twice) != string(once) || string(fresh) != string(once) {
			t.Fatalf("unstable canonical form:\n%s\n%s\n%s", once, twice, fresh)
		}
	})
}
