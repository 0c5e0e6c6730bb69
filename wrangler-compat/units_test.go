//go:build linux

package wranglercompat_test

import (
	"encoding/json"
	"testing"

	"decisiongateway/shared/keys"
	"decisiongateway/shared/keys/keystest"
)

// TestShimUnits runs the JavaScript unit tests of the shim (test/*.test.mjs)
// with Node's test runner: settings, routing, durations, the WASI clock, the
// fetch policy and the front Worker. runNode fails the test with the
// runner's report.
func TestShimUnits(t *testing.T) {
	runNode(t, "", "--test", "--test-reporter=dot", "test/shim.test.mjs", "test/front.test.mjs", "test/memo.test.mjs")
}

// TestStickyKeyMatchesTheWazeroHost feeds keys and cookies made by
// shared/keys to src/sticky.js: the account it finds for each must be the
// one keys.AccountHint finds, or Workers would keep callers together by a
// different key than the wazero host's canary does.
func TestStickyKeyMatchesTheWazeroHost(t *testing.T) {
	acct := keys.NewAccountID()
	key, session := keys.New(keys.APIKey, acct), keys.New(keys.Session, acct)
	type hint struct {
		Authorization string `json:"authorization"`
		Cookie        string `json:"cookie"`
	}
	cases := []hint{
		{Authorization: "Bearer " + key},
		{Authorization: "bearer   " + key + "  "},
		{Authorization: "Bearer " + keystest.BadChecksum(key)}, // checksum off
		{Authorization: "Bearer " + session},                   // a session is no API key
		{Authorization: "Basic " + key},
		{Authorization: "Bearer " + keys.New(keys.SignIn, acct)},
		{Cookie: "theme=dark; " + keys.SessionCookie + "=" + session + "; x=1"},
		{Cookie: keys.SessionCookie + "=" + key},
		{Authorization: "Bearer nonsense", Cookie: keys.SessionCookie + "=" + session},
		{Authorization: "Bearer " + key, Cookie: keys.SessionCookie + "=" + keys.New(keys.Session, keys.NewAccountID())},
		{},
	}
	in, _ := json.Marshal(cases)
	var got []string
	if err := json.Unmarshal([]byte(runNode(t, string(in), "test/sticky-driver.mjs")), &got); err != nil || len(got) != len(cases) {
		t.Fatalf("driver answered %v (%v)", got, err)
	}
	for i, c := range cases {
		if want := keys.AccountHint(c.Authorization, c.Cookie); got[i] != want {
			t.Errorf("case %d %+v: sticky.js found %q, keys.AccountHint %q", i, c, got[i], want)
		}
	}
}
