package routes

import (
	"slices"
	"testing"
)

var table = []Route{
	{Method: "GET", Pattern: "/api/service/keys", Function: "keys"},
	{Method: "POST", Pattern: "/api/service/keys", Function: "keys"},
	{Method: "DELETE", Pattern: "/api/service/keys/:id", Function: "keys"},
	{Method: "POST", Pattern: "/v1/service", Function: "decide"},
}

func TestMatchExactAndParam(t *testing.T) {
	cases := []struct{ method, path, fn string }{
		{"GET", "/api/service/keys", "keys"},
		{"HEAD", "/api/service/keys", "keys"},
		{"DELETE", "/api/service/keys/k_123", "keys"},
		{"POST", "/v1/service", "decide"},
	}
	for _, c := range cases {
		r, _ := Match(table, c.method, c.path)
		if r == nil || r.Function != c.fn {
			t.Errorf("%s %s: got %v", c.method, c.path, r)
		}
	}
	if got := Param("/api/service/keys/:id", "/api/service/keys/k_9", "id"); got != "k_9" {
		t.Errorf("param = %q", got)
	}
}

func TestWrongMethodListsAllowed(t *testing.T) {
	r, allow := Match(table, "PUT", "/api/service/keys")
	if r != nil || !slices.Equal(allow, []string{"GET", "POST"}) {
		t.Fatalf("got %v %v", r, allow)
	}
}

func TestNoMatch(t *testing.T) {
	for _, p := range []string{"/api/service/keys/", "/api/service/keys/a/b", "/v1/service/x", "/", "/v1"} {
		if r, allow := Match(table, "DELETE", p); r != nil || len(allow) != 0 {
			t.Errorf("%s matched %v %v", p, r, allow)
		}
	}
}
