// Package devmail is the mail sink of `gateway serve --dev`: an HTTP
// endpoint on loopback that accepts the mail JSON of schema/mail.md, as a
// real mail service would, writes each message as a file under the outbox
// directory and logs its sign-in link. A newcomer can sign in to a
// development console with no mail server; nothing leaves the machine.
package devmail

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"time"
)

// Mail is one message in the wire format of schema/mail.md.
type Mail struct {
	From    string `json:"from"`
	To      string `json:"to"`
	Subject string `json:"subject"`
	Text    string `json:"text"`
	HTML    string `json:"html,omitempty"`
}

// Outbox is a running sink.
type Outbox struct {
	// URL is what MAIL_URL must be set to.
	URL string
	// Dir holds one .eml file per accepted message.
	Dir string

	log *slog.Logger
	srv *http.Server
	seq atomic.Int64
}

// Start listens on a free loopback port and serves until ctx ends or Close
// is called.
func Start(ctx context.Context, dir string, log *slog.Logger) (*Outbox, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	o := &Outbox{URL: "http://" + ln.Addr().String() + "/send", Dir: dir, log: log}
	o.srv = &http.Server{Handler: o, ReadHeaderTimeout: 5 * time.Second}
	go o.srv.Serve(ln)
	go func() {
		<-ctx.Done()
		o.Close()
	}()
	return o, nil
}

// Close stops the sink.
func (o *Outbox) Close() error { return o.srv.Close() }

// LinkPattern finds the sign-in link in a message's text (the console with
// the token, and the asking console's nonce, in its fragment).
var LinkPattern = regexp.MustCompile(`https?://[^\s"<>]+/#signin=[a-z0-9_]+(&n=[a-z0-9]+)?`)

// ServeHTTP accepts POST /send with a Mail JSON body: 202 when stored,
// 400 for a message without a recipient, subject or text.
func (o *Outbox) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST a mail", http.StatusMethodNotAllowed)
		return
	}
	var m Mail
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&m); err != nil {
		http.Error(w, "not a mail JSON object", http.StatusBadRequest)
		return
	}
	if m.To == "" || m.Subject == "" || m.Text == "" || strings.ContainsAny(m.To+m.From+m.Subject, "\r\n") {
		http.Error(w, "to, subject and text are required; header fields are one line each", http.StatusBadRequest)
		return
	}
	path, err := o.store(&m)
	if err != nil {
		o.log.Error("dev outbox: mail not stored", "error", err.Error())
		http.Error(w, "outbox not writable", http.StatusInternalServerError)
		return
	}
	// This is the development sink, the one place a sign-in link is
	// logged: it is how a newcomer signs in without a mail server.
	o.log.Info("dev outbox: mail stored", "to", m.To, "subject", m.Subject, "file", path, "link", LinkPattern.FindString(m.Text))
	w.WriteHeader(http.StatusAccepted)
}

// store writes m as an .eml file that any mail client opens. Names sort
// by arrival; files are private to the user (they hold sign-in links).
func (o *Outbox) store(m *Mail) (string, error) {
	now := time.Now().UTC()
	name := fmt.Sprintf("%s-%04d.eml", now.Format("20060102T150405.000000000Z"), o.seq.Add(1))
	var b strings.Builder
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\nSubject: %s\r\nDate: %s\r\nMIME-Version: 1.0\r\n", m.From, m.To, m.Subject, now.Format(time.RFC1123Z))
	if m.HTML == "" {
		fmt.Fprintf(&b, "Content-Type: text/plain; charset=utf-8\r\n\r\n%s", m.Text)
	} else {
		const boundary = "dg-outbox-alternative"
		fmt.Fprintf(&b, "Content-Type: multipart/alternative; boundary=%q\r\n\r\n", boundary)
		fmt.Fprintf(&b, "--%s\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n%s\r\n", boundary, m.Text)
		fmt.Fprintf(&b, "--%s\r\nContent-Type: text/html; charset=utf-8\r\n\r\n%s\r\n--%s--\r\n", boundary, m.HTML, boundary)
	}
	path := filepath.Join(o.Dir, name)
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return "", err
	}
	return path, nil
}

// Latest returns the sign-in link of the newest message in dir sent to
// address ("" for any), for tests and tools that sign in through the
// outbox.
func Latest(dir, address string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	for i := len(entries) - 1; i >= 0; i-- {
		data, err := os.ReadFile(filepath.Join(dir, entries[i].Name()))
		if err != nil {
			return "", err
		}
		if address != "" && !strings.Contains(string(data), "\r\nTo: "+address+"\r\n") {
			continue
		}
		if link := LinkPattern.FindString(string(data)); link != "" {
			return link, nil
		}
	}
	return "", errors.New("devmail: no sign-in link in " + dir)
}
