package upstream

import (
	"strings"
	"testing"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/platform"
)

// TestVendorAnswerClassification pins how a vendor answer is classified:
// text that is not JSON at all is an unusable response, JSON that breaks
// the answer rules (the strict scan included) is an invalid answer, and a
// valid answer is a success.
func TestVendorAnswerClassification(t *testing.T) {
	const body = `{"state":null,"questions":{"q":{"type":"noul"}}}`
	const good = `{"model":"m","answers":{"q":{"type":"noul","noul":0.9}}}`
	for _, c := range []struct {
		name, contentType, answer string
		ok                        bool
		code                      string
	}{
		{"valid", "application/json", good, true, ""},
		{"not JSON", "application/json", `<html>`, false, "upstream_invalid_response"},
		{"truncated", "application/json", good[:len(good)-1], false, "upstream_invalid_response"},
		{"JSON, but not a JSON content type", "text/plain", good, false, "upstream_invalid_response"},
		// Two Content-Type lines are one value joined, as Workers reads them.
		{"content type given twice", "application/json\napplication/json", good, false, "upstream_invalid_response"},
		{"duplicate key", "application/json", `{"model":"m","model":"n","answers":{"q":{"type":"noul","noul":0.9}}}`, false, "invalid_upstream_answer"},
		{"invalid UTF-8 in a string", "application/json", "{\"model\":\"m\xff\",\"answers\":{\"q\":{\"type\":\"noul\",\"noul\":0.9}}}", false, "invalid_upstream_answer"},
		{"wrong shape", "application/json", `{"model":"m","answers":{}}`, false, "invalid_upstream_answer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := &recordingTransport{reply: func(*abi.FetchRequest) (abi.FetchResponse, error) {
				var h abi.Headers
				for _, v := range strings.Split(c.contentType, "\n") {
					h = append(h, abi.Header{Name: "content-type", Value: v})
				}
				return abi.FetchResponse{Status: 200, Headers: h, Body: []byte(c.answer)}, nil
			}}
			a := adapterFor(t, "vendor", platform.MapConfig{})
			o := Decide(&platform.Env{Transport: tr}, a, newCall(t, "vendor", body))
			if o.OK != c.ok || string(o.Code) != c.code {
				t.Fatalf("OK %v code %q, want %v %q (status %d, body %s)", o.OK, o.Code, c.ok, c.code, o.Status, o.Body)
			}
		})
	}
}
