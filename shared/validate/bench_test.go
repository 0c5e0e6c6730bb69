package validate

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// comparison is another JSON implementation measured beside the Validator
// on the same bytes. The jsontext sibling registers itself from a file that
// only builds with GOEXPERIMENT=jsonv2.
type comparison struct {
	name string
	run  func(b []byte) bool
}

var comparisons = []comparison{
	{"encoding-json-Valid", json.Valid},
	{"encoding-json-Unmarshal", func(b []byte) bool {
		var v any
		return json.Unmarshal(b, &v) == nil
	}},
}

// benchBody builds a valid, realistic request of close to size bytes: a
// state of records with text (escapes, non-ASCII), numbers and nesting, and
// one question of each type.
func benchBody(size int) string {
	var b strings.Builder
	b.WriteString(`{"model":"model-latest","questions":{` +
		`"route":{"type":"choice","instructions":"Pick the best team.","criteria":{"billing":"Invoices and refunds","tech":"Errors, outages","sales":{"desc":"New contracts","tags":["upsell","renewal"]}}},` +
		`"urgency":{"type":"score","criteria":["none","low","medium","high","critical"]},` +
		`"churn":{"type":"noul","criteria":{"true":"Customer intends to leave"}}},` +
		`"state":{"ticket":"T-1","history":[`)
	for i := 0; b.Len() < size-260; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"at":"2026-09-%02dT10:%02d:00Z","author":"user\u00e9 %d","text":"Line \"%d\" of the conversation, with a tab\tand €uro — ok","score":%d.%03d,"flags":[true,false,null],"meta":{"lang":"en","w":1e-3}}`,
			i, i%28+1, i%60, i, i, i%7, i%1000)
	}
	b.WriteString(`],"customer":{"name":"Ada","tier":"gold","since":2019}}}`)
	return b.String()
}

func benchBodies() map[string]string {
	return map[string]string{"1KB": benchBody(1 << 10), "16KB": benchBody(16 << 10), "64KB": benchBody(64 << 10)}
}

// BenchmarkValidate measures the full request validation (JSON text, depth,
// duplicates, request rules) against mere JSON validation or decoding by
// other implementations, on the same bytes, in MB/s and allocs/op.
func BenchmarkValidate(b *testing.B) {
	bodies := benchBodies()
	for _, size := range []string{"1KB", "16KB", "64KB"} {
		body := []byte(bodies[size])
		b.Run(size, func(b *testing.B) {
			b.Run("validate", func(b *testing.B) {
				var v Validator
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := v.Validate(body); err != nil {
						b.Fatal(err)
					}
				}
			})
			for _, c := range comparisons {
				b.Run(c.name, func(b *testing.B) {
					b.SetBytes(int64(len(body)))
					b.ReportAllocs()
					for b.Loop() {
						if !c.run(body) {
							b.Fatal("rejected")
						}
					}
				})
			}
		})
	}
}

func TestBenchBodiesAreValidAndSized(t *testing.T) {
	for name, body := range benchBodies() {
		var v Validator
		if _, err := v.Validate([]byte(body)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(body) > 65536 {
			t.Fatalf("%s: %d bytes", name, len(body))
		}
	}
}
