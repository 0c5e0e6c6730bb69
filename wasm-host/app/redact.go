package app

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// redacted stands in a log line for a secret the host holds.
const redacted = "[REDACTED]"

// redactingHandler removes the host's secrets (the upstream key, the mail
// key, the ledger token) from every log record: its message and every
// attribute, whatever its kind. Egress never hands a guest an answer that
// contains the credential it was sent (wasm-host/egress), so no secret
// should reach a log in the first place; this is the second line, for
// text nobody thought of (an error that quotes a URL, a guest's output).
type redactingHandler struct {
	next    slog.Handler
	secrets []string
}

// redactLog wraps log so that none of secrets (empty ones ignored) can
// appear in what it writes.
func redactLog(log *slog.Logger, secrets ...string) *slog.Logger {
	var keep []string
	for _, s := range secrets {
		if s != "" {
			keep = append(keep, s)
		}
	}
	if len(keep) == 0 {
		return log
	}
	return slog.New(redactingHandler{next: log.Handler(), secrets: keep})
}

func (h redactingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h redactingHandler) Handle(ctx context.Context, r slog.Record) error {
	if h.clean(r) {
		// Nothing to take out (every access line): the record goes on
		// as it is, without a copy.
		return h.next.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, h.scrub(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h redactingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = h.attr(a)
	}
	return redactingHandler{next: h.next.WithAttrs(clean), secrets: h.secrets}
}

func (h redactingHandler) WithGroup(name string) slog.Handler {
	return redactingHandler{next: h.next.WithGroup(name), secrets: h.secrets}
}

// clean reports whether r holds none of the secrets: its message, and
// every attribute's key and value as attr would see them. An attribute of
// another kind than string or number (a group, an error, a LogValuer) is
// not inspected here: attr does that on the copy.
func (h redactingHandler) clean(r slog.Record) bool {
	if h.holds(r.Message) {
		return false
	}
	ok := true
	r.Attrs(func(a slog.Attr) bool {
		switch a.Value.Kind() {
		case slog.KindString:
			ok = !h.holds(a.Value.String())
		case slog.KindInt64, slog.KindUint64, slog.KindFloat64, slog.KindBool, slog.KindDuration, slog.KindTime:
		default:
			ok = false
		}
		ok = ok && !h.holds(a.Key)
		return ok
	})
	return ok
}

// holds reports whether s contains one of the secrets.
func (h redactingHandler) holds(s string) bool {
	for _, secret := range h.secrets {
		if strings.Contains(s, secret) {
			return true
		}
	}
	return false
}

// scrub replaces every secret in s (strings.ReplaceAll returns s itself
// when the secret is not there).
func (h redactingHandler) scrub(s string) string {
	for _, secret := range h.secrets {
		s = strings.ReplaceAll(s, secret, redacted)
	}
	return s
}

func (h redactingHandler) attr(a slog.Attr) slog.Attr {
	a.Key = h.scrub(a.Key)
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(h.scrub(v.String()))
	case slog.KindGroup:
		group := v.Group()
		clean := make([]slog.Attr, len(group))
		for i, g := range group {
			clean[i] = h.attr(g)
		}
		a.Value = slog.GroupValue(clean...)
	case slog.KindAny:
		// An error or any other value is logged as its text; if that text
		// holds a secret, log the scrubbed text instead.
		if text := fmt.Sprint(v.Any()); h.scrub(text) != text {
			a.Value = slog.StringValue(h.scrub(text))
		} else {
			a.Value = v
		}
	default:
		a.Value = v
	}
	return a
}
