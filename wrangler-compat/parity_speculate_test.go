//go:build linux

package wranglercompat_test

import (
	"context"
	"testing"

	"decisiongateway/shared/abi"
	"decisiongateway/wasm-host/ledger"
)

// TestSpeculativeRefusalAgreesOnBothHosts: a key revoked elsewhere (here,
// in each ledger directly) while the host still remembers it allowed. A
// decision that called its upstream before reserving (schema/ledger.md,
// "Speculative decisions": the wazero host's memo, the isolate's on
// Workers) is answered as the reservation decides, 401, alike on both
// hosts, with nothing of the upstream's answer and nothing charged.
// Whether a decision speculates depends on measured latencies, so the key
// is revoked and restored until each host has (its vendor was called for
// the refused request).
func TestSpeculativeRefusalAgreesOnBothHosts(t *testing.T) {
	p := startPair(t, "vendor", "/v1", answerVendor)
	const email = "speculator@example.test"
	key := p.each(func(i int) string { return p.admin(i, "key", email) })
	withKey := func(i int) []string { return bearer(key[i]) }
	revoke := func(at string) {
		for i := range p.sides {
			p.exec(i, `UPDATE api_keys SET revoked_at = `+at+` WHERE account_id = (SELECT id FROM accounts WHERE email = ?)`, abi.String(email))
		}
	}
	var speculated [2]bool
	// SERVICE_RATE_LIMIT is 50 a minute: at most 6 tries of 5 decisions.
	for try := 0; try < 6 && !(speculated[0] && speculated[1]); try++ {
		for range 4 {
			for i, a := range p.both("POST", "/v1/service", decisionBody, withKey) {
				if a.status != 200 {
					t.Fatalf("%s: %d %s", p.sides[i].name, a.status, a.body)
				}
			}
		}
		revoke("1")
		calls := [2]int{len(p.sides[0].upstream.seen()), len(p.sides[1].upstream.seen())}
		refused := p.both("POST", "/v1/service", decisionBody, withKey)
		p.same("decision with a key revoked elsewhere", refused, true, decisionHeaders...)
		for i, a := range refused {
			if a.status != 401 || a.header.Get("X-Service-Error-Code") != "invalid_api_key" || a.header.Get("X-Service-Credits") != "0" {
				t.Fatalf("%s: revoked: %d %q %s", p.sides[i].name, a.status, a.header.Get("X-Service-Error-Code"), a.body)
			}
			speculated[i] = speculated[i] || len(p.sides[i].upstream.seen()) == calls[i]+1
		}
		revoke("NULL")
		if b := p.balances(email); b[0] != b[1] {
			t.Fatalf("balance %d on the wazero host, %d on Workers", b[0], b[1])
		}
	}
	if !speculated[0] || !speculated[1] {
		t.Fatalf("speculated: wazero %v, Workers %v", speculated[0], speculated[1])
	}
}

// exec runs one statement on side i's ledger.
func (p *pair) exec(i int, sql string, args ...abi.Value) {
	p.t.Helper()
	led, err := ledger.Open(context.Background(), p.sides[i].ledger, "")
	if err != nil {
		p.t.Fatal(err)
	}
	defer led.Close()
	if res := led.Exec(context.Background(), &abi.Batch{Steps: []abi.Statement{{SQL: sql, Args: args}}}); res.Err != "" {
		p.t.Fatalf("%s: %s", p.sides[i].name, res.Err)
	}
}
