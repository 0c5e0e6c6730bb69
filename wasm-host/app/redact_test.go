package app

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// No log line carries a secret the host holds, wherever in the record it
// was put: message, string, error or nested attribute, or a logger's
// fixed attributes.
func TestLogsNeverCarryTheHostsSecrets(t *testing.T) {
	var buf bytes.Buffer
	log := redactLog(slog.New(slog.NewJSONHandler(&buf, nil)), "sk-upstream-1", "", "mk-mail-2", "tok-ledger-3")
	log = log.With("fixed", "ledger tok-ledger-3")
	log.Warn("upstream answered sk-upstream-1",
		"text", "Bearer sk-upstream-1",
		"error", errors.New("dial mail with mk-mail-2"),
		slog.Group("request", "authorization", "Bearer sk-upstream-1"),
		"count", 3)
	out := buf.String()
	for _, secret := range []string{"sk-upstream-1", "mk-mail-2", "tok-ledger-3"} {
		if strings.Contains(out, secret) {
			t.Errorf("log carries %q: %s", secret, out)
		}
	}
	for _, kept := range []string{"upstream answered [REDACTED]", `"count":3`, "dial mail with [REDACTED]", `"request":{"authorization":"Bearer [REDACTED]"}`} {
		if !strings.Contains(out, kept) {
			t.Errorf("log lacks %q: %s", kept, out)
		}
	}
}

// A record whose only secret is in one place, a string attribute's value
// or key late in the record, or a number's key, is caught as well as one
// with secrets everywhere; and a record without any is written whole.
func TestLogsWithOneSecretAnywhereAreScrubbed(t *testing.T) {
	for name, c := range map[string]struct {
		args []any
		want string
	}{
		"last string value": {[]any{"a", "x", "n", 2, "b", "key sk-upstream-1"}, `"b":"key [REDACTED]"`},
		"string key":        {[]any{"a", "x", "sk-upstream-1", "y"}, `"[REDACTED]":"y"`},
		"number key":        {[]any{"a", "x", "sk-upstream-1", 7}, `"[REDACTED]":7`},
		"none":              {[]any{"a", "x", "n", 2, "d", 1.5, "ok", true}, `"a":"x","n":2,"d":1.5,"ok":true`},
	} {
		var buf bytes.Buffer
		log := redactLog(slog.New(slog.NewJSONHandler(&buf, nil)), "sk-upstream-1")
		log.Info("request", c.args...)
		if out := buf.String(); strings.Contains(out, "sk-upstream-1") || !strings.Contains(out, c.want) {
			t.Errorf("%s: %s, want %s and no secret", name, out, c.want)
		}
	}
}
