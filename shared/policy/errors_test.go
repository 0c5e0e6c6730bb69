package policy

import (
	"encoding/json"
	"testing"

	"decisiongateway/shared/contract"
)

// Every code the platform answers by itself gets its status from the
// contract's table, and its body and headers name the code.
func TestErrorStatusComesFromTheTable(t *testing.T) {
	for _, e := range contract.Errors {
		if e.Status == 0 {
			continue // only ever sent with the upstream's status (ErrorAs)
		}
		r := Error(e.Code, "m")
		var body struct {
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatalf("%s: %v", e.Code, err)
		}
		if r.Status != e.Status || body.Error.Code != string(e.Code) || r.Headers.Get(HErrorCode) != string(e.Code) || r.Headers.Get(HErrorSource) != SourcePlatform {
			t.Errorf("%s: %d %s %q, want %d", e.Code, r.Status, r.Body, r.Headers.Get(HErrorCode), e.Status)
		}
	}
	if r := ErrorAs(529, contract.ProviderBusy, "busy"); r.Status != 529 || r.Headers.Get(HErrorCode) != "provider_busy" {
		t.Errorf("ErrorAs: %d %v", r.Status, r.Headers)
	}
}
