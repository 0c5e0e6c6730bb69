package client_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"decisiongateway/client"
	"decisiongateway/testkit/hosttest"
	"decisiongateway/testkit/testenv"
)

// dropProxy relays TCP to target until drop is called; from then on it
// still carries what the client writes to the gateway but keeps the
// gateway's answer back, closes the client's connection once the answer
// came, and stops listening: a kept connection that dies after the request
// left, with the host gone for a new one.
type dropProxy struct {
	ln       net.Listener
	dropping atomic.Bool
	mu       sync.Mutex
	conns    []net.Conn
}

func newDropProxy(t *testing.T, target string) *dropProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &dropProxy{ln: ln}
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", strings.TrimPrefix(target, "http://"))
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, b)
			p.mu.Unlock()
			go io.Copy(b, c)
			go func() {
				buf := make([]byte, 32<<10)
				for {
					n, err := b.Read(buf)
					if n > 0 && p.dropping.Load() {
						c.Close()
						ln.Close()
						return
					}
					if n > 0 {
						c.Write(buf[:n])
					}
					if err != nil {
						c.Close()
						return
					}
				}
			}()
		}
	}()
	return p
}

func (p *dropProxy) url() string { return "http://" + p.ln.Addr().String() }

// A request written on a kept connection that then dies may have run: the
// gateway did run and charge it here. The client says the outcome is
// unknown, even though the transport's new connection would then be
// refused (which alone means "never sent"), and it sends the request once
// (the transport does not resend it unseen). Recover learns the outcome:
// one charge.
func TestRequestWrittenOnAConnectionThatDiesIsUncertain(t *testing.T) {
	h, v := startHost(t, nil)
	acct, key := h.NewAccount(email(), 10)
	p := newDropProxy(t, h.URL)
	c := newClient(t, p.url(), key, client.WithAttempts(3))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Decide(ctx, apple); err != nil { // leaves the connection kept
		t.Fatal(err)
	}
	p.dropping.Store(true)
	_, err := c.Decide(ctx, apple)
	var e *client.Error
	if !errors.As(err, &e) || !e.Uncertain || e.IdempotencyKey == "" {
		t.Fatalf("Decide whose answer was lost: %v (uncertain %v)", err, e != nil && e.Uncertain)
	}
	if n := len(v.decisions()); n != 2 {
		t.Fatalf("the vendor was asked %d times, want 2", n)
	}
	d, err := newClient(t, h.URL, key).Recover(ctx, e.IdempotencyKey, apple)
	if err != nil || !d.Replayed {
		t.Fatalf("Recover: %v", err)
	}
	checkCharged(t, h, acct, 10, 2)
}

// Recover is called on a key whose outcome is unknown; when no answer
// tells it (the gateway cannot be reached), it is still unknown.
func TestRecoverWithoutAnAnswerStaysUncertain(t *testing.T) {
	c := newClient(t, "http://"+testenv.FreeAddr(t), "dgk_x", client.WithAttempts(2))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := c.Recover(ctx, "key-1", apple)
	var e *client.Error
	if !errors.As(err, &e) || !e.Uncertain || e.IdempotencyKey != "key-1" {
		t.Fatalf("Recover with the gateway unreachable: %v", err)
	}
}

// The usage is optional and the gateway passes the upstream's numbers on
// as written: a count in any spelling is read, one that is not a whole
// number within int64 is unknown (nil), and the decision is never refused
// over it.
func TestUsageInAnySpellingIsReadNotRefused(t *testing.T) {
	h, v := startHost(t, nil)
	_, key := h.NewAccount(email(), 10)
	c := newClient(t, h.URL, key)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for usage, want := range map[string][2]string{
		`{"input_tokens":120.0,"output_tokens":1.2e2}`:            {"120", "120"},
		`{"input_tokens":99999999999999999999,"output_tokens":7}`: {"nil", "7"},
		`{"input_tokens":null,"output_tokens":4}`:                 {"nil", "4"},
	} {
		v.answerWith(func(_ int, w http.ResponseWriter, body []byte) {
			rec := &bodyRecorder{ResponseWriter: w}
			answer(rec, body)
			w.Write([]byte(strings.Replace(rec.body.String(), `"usage":{"input_tokens":9,"output_tokens":3}`, `"usage":`+usage, 1)))
		})
		d, err := c.Decide(ctx, apple)
		if err != nil {
			t.Fatalf("usage %s: %v", usage, err)
		}
		if got := [2]string{show(d.Usage.InputTokens), show(d.Usage.OutputTokens)}; got != want {
			t.Errorf("usage %s: read %v, want %v", usage, got, want)
		}
	}
}

// bodyRecorder keeps what answer writes, so a test can change it first.
type bodyRecorder struct {
	http.ResponseWriter
	body strings.Builder
}

func (r *bodyRecorder) Write(b []byte) (int, error) { return r.body.Write(b) }

func show(n *int64) string {
	if n == nil {
		return "nil"
	}
	return strconv.FormatInt(*n, 10)
}

// After a refund the gateway confirmed, the error of a call that ends
// there names the key that attempt used, the one the ledger holds, not the
// fresh key a next attempt would have taken.
func TestErrorAfterARefundNamesTheKeyItSent(t *testing.T) {
	h, v := startHost(t, nil)
	acct, key := h.NewAccount(email(), 10)
	v.answerWith(func(_ int, w http.ResponseWriter, _ []byte) {
		w.WriteHeader(502)
		w.Write([]byte("<html>bad gateway</html>"))
	})
	c := newClient(t, h.URL, key, client.WithAttempts(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := c.Decide(ctx, apple)
	var e *client.Error
	if !errors.As(err, &e) || e.Credits == nil || *e.Credits != 0 || e.Uncertain {
		t.Fatalf("Decide with a failing vendor: %v", err)
	}
	rows := attemptRows(h, acct)
	if len(rows) != 1 || !strings.Contains(rows[0], " "+e.IdempotencyKey+" failed ") {
		t.Fatalf("error names key %q; the ledger holds %q", e.IdempotencyKey, rows)
	}
}

// A model listing charges nothing, so a busy upstream's answer to it is
// waited out (Retry-After) and asked again like any answer that proves
// nothing, not returned at once.
func TestModelsWaitsOutABusyUpstream(t *testing.T) {
	var asked atomic.Int32
	up := hosttest.NewRecorder(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		if asked.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(503)
			w.Write([]byte(`{"error":{"type":"overloaded"}}`))
			return
		}
		w.Write([]byte(`{"models":[{"name":"model-x","description":"d","release_date":"2026-09-18"}]}`))
	})
	h := hosttest.Start(t, map[string]string{"UPSTREAM_KIND": "vendor", "UPSTREAM_URL": up.URL + "/v1", "UPSTREAM_API_KEY": operatorKey})
	_, key := h.NewAccount(email(), 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	models, err := newClient(t, h.URL, key).Models(ctx)
	if err != nil || len(models) != 1 || asked.Load() != 2 {
		t.Fatalf("Models after a busy answer: %v, %d models, upstream asked %d times", err, len(models), asked.Load())
	}
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("asked again after %v, before Retry-After: 1", waited)
	}
}
