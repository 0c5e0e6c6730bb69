package app_test

import (
	"io"
	"net/http"
	"testing"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/keys"
	"decisiongateway/testkit/hosttest"
)

// modelsHost is a host whose upstream lists no models, with an account and
// its key: GET /v1/models is an authenticated request that costs nothing.
func modelsHost(t *testing.T, env map[string]string) (*hosttest.Host, string) {
	t.Helper()
	vendor := hosttest.NewRecorder(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"models":[]}`)
	})
	env["UPSTREAM_KIND"], env["UPSTREAM_URL"] = "vendor", vendor.URL+"/v1"
	h := hosttest.Start(t, env)
	_, key := h.NewAccount("proxy@example.com", 0)
	return h, key
}

func listModels(t *testing.T, h *hosttest.Host, key string, header ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", h.URL+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("X-Service-Error-Code")
}

// authAttempts is how many authentication attempts the ledger counted for
// a client address, over every minute window.
func authAttempts(h *hosttest.Host, addr string) int64 {
	return h.Rows(`SELECT COALESCE(SUM(count), 0) FROM rate_windows WHERE scope = 'auth:' || ?`, abi.String(keys.HashClient(addr)))[0][0].AsInt()
}

// exhaust fills a client address's authentication window, for this minute
// and the next so that a minute turning over mid-test changes nothing.
func exhaust(h *hosttest.Host, addr string, limit int64) {
	now := time.Now().Unix() / 60 * 60
	for _, w := range []int64{now, now + 60} {
		h.Rows(`INSERT INTO rate_windows (scope, window_start, count) VALUES ('auth:' || ?, ?, ?)
ON CONFLICT (scope, window_start) DO UPDATE SET count = excluded.count`, abi.String(keys.HashClient(addr)), abi.Int64(w), abi.Int64(limit))
	}
}

// Behind trusted proxies (GATEWAY_TRUSTED_PROXIES), every client is counted
// on its own address, taken from the right of X-Forwarded-For: a client
// that prepends addresses is still counted as itself, and one whose
// address is exhausted is refused while its neighbours are not.
func TestAuthLimitCountsEachClientBehindATrustedProxy(t *testing.T) {
	h, key := modelsHost(t, map[string]string{"GATEWAY_TRUSTED_PROXIES": "127.0.0.1, 10.0.0.0/8", "SERVICE_AUTH_RATE_LIMIT": "50"})
	const a, b = "203.0.113.7", "198.51.100.9"
	for _, xff := range []string{a, a + ", 10.1.2.3", "192.0.2.66, " + a, b + ", 10.1.2.3"} {
		if status, code := listModels(t, h, key, "X-Forwarded-For", xff); status != 200 {
			t.Fatalf("X-Forwarded-For %q: %d %s", xff, status, code)
		}
	}
	if n := authAttempts(h, a); n != 3 {
		t.Errorf("client %s: %d attempts counted, want 3", a, n)
	}
	if n := authAttempts(h, b); n != 1 {
		t.Errorf("client %s: %d attempts counted, want 1", b, n)
	}
	if n := authAttempts(h, "192.0.2.66") + authAttempts(h, "127.0.0.1") + authAttempts(h, "10.1.2.3"); n != 0 {
		t.Errorf("%d attempts counted on forged or proxy addresses", n)
	}
	exhaust(h, a, 50)
	if status, code := listModels(t, h, key, "X-Forwarded-For", "192.0.2.66, "+a); status != 429 || code != "auth_rate_limited" {
		t.Errorf("exhausted client: %d %s", status, code)
	}
	if status, _ := listModels(t, h, key, "X-Forwarded-For", b); status != 200 {
		t.Errorf("its neighbour behind the same proxy: %d", status)
	}
}

// With GATEWAY_FORWARDED_HEADER=Forwarded the client comes from
// Forwarded's for=, and X-Forwarded-For is not read at all.
func TestAuthLimitReadsForwardedWhenConfigured(t *testing.T) {
	h, key := modelsHost(t, map[string]string{"GATEWAY_TRUSTED_PROXIES": "127.0.0.1", "GATEWAY_FORWARDED_HEADER": "Forwarded"})
	listModels(t, h, key, "Forwarded", `for=203.0.113.7;proto=https`)
	listModels(t, h, key, "X-Forwarded-For", "198.51.100.9")
	if a, b, peer := authAttempts(h, "203.0.113.7"), authAttempts(h, "198.51.100.9"), authAttempts(h, "127.0.0.1"); a != 1 || b != 0 || peer != 1 {
		t.Errorf("counted: Forwarded client %d, X-Forwarded-For client %d, peer %d; want 1, 0, 1", a, b, peer)
	}
}

// Without the setting, or when the connection does not come from a trusted
// proxy, forwarded headers are ignored: a client cannot spread its attempts
// over made-up addresses, and an exhausted address stays refused whatever
// it claims.
func TestForwardedHeadersCannotForgeTheClientAddress(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"no setting":          {},
		"peer is not a proxy": {"GATEWAY_TRUSTED_PROXIES": "10.0.0.0/8"},
	} {
		t.Run(name, func(t *testing.T) {
			h, key := modelsHost(t, env)
			for _, claim := range [][]string{{"X-Forwarded-For", "203.0.113.7"}, {"X-Forwarded-For", "198.51.100.9, 10.1.2.3"}, {"Forwarded", "for=192.0.2.1"}} {
				listModels(t, h, key, claim...)
			}
			if peer, forged := authAttempts(h, "127.0.0.1"), authAttempts(h, "203.0.113.7")+authAttempts(h, "198.51.100.9")+authAttempts(h, "192.0.2.1"); peer != 3 || forged != 0 {
				t.Errorf("counted %d on the peer and %d on claimed addresses; want 3 and 0", peer, forged)
			}
			exhaust(h, "127.0.0.1", 600)
			if status, code := listModels(t, h, key, "X-Forwarded-For", "203.0.113.99"); status != 429 || code != "auth_rate_limited" {
				t.Errorf("exhausted peer claiming another address: %d %s", status, code)
			}
		})
	}
}

// The metrics endpoint answers local clients only; behind a trusted proxy
// on the same machine, the forwarded client must be local too.
func TestMetricsStayLocalBehindATrustedProxy(t *testing.T) {
	h, _ := modelsHost(t, map[string]string{"GATEWAY_TRUSTED_PROXIES": "127.0.0.1"})
	for _, c := range []struct {
		xff    string
		status int
	}{{"", 200}, {"203.0.113.7", 404}, {"127.0.0.1", 200}} {
		req, _ := http.NewRequest("GET", h.URL+"/_gateway/metrics", nil)
		if c.xff != "" {
			req.Header.Set("X-Forwarded-For", c.xff)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("metrics for forwarded client %q: %d, want %d", c.xff, resp.StatusCode, c.status)
		}
	}
}
