package devmail

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
)

func TestOutboxStoresMailAndLogsTheLink(t *testing.T) {
	var logs bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o, err := Start(ctx, t.TempDir(), slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	link := "http://127.0.0.1:8787/#signin=dgl_abc_def"
	body, _ := json.Marshal(Mail{From: "gw <no-reply@localhost>", To: "ada@example.com", Subject: "Sign in", Text: "Open " + link + "\n", HTML: "<a href=x>x</a>"})
	resp, err := http.Post(o.URL, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 202 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	got, err := Latest(o.Dir, "ada@example.com")
	if err != nil || got != link {
		t.Fatalf("Latest = %q, %v", got, err)
	}
	if _, err := Latest(o.Dir, "bob@example.com"); err == nil {
		t.Fatal("found a link for another address")
	}
	entries, _ := os.ReadDir(o.Dir)
	info, _ := entries[0].Info()
	if len(entries) != 1 || info.Mode().Perm() != 0o600 {
		t.Fatalf("outbox %v", entries)
	}
	if !strings.Contains(logs.String(), `"link":"`+link+`"`) {
		t.Fatalf("log %s", logs.String())
	}

	for _, bad := range []string{`{}`, `not json`, `{"to":"a@b.c","subject":"x\r\nBcc: evil@x","text":"t"}`} {
		resp, err := http.Post(o.URL, "application/json", strings.NewReader(bad))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("%s: status %d", bad, resp.StatusCode)
		}
	}
}
