//go:build wasip1

// Command testguest is a module for the host's own tests. Each path
// exercises one part of the ABI or one way a guest can misbehave.
package main

import (
	"crypto/rand"
	"encoding/hex"
	mrand "math/rand/v2"
	"strconv"
	"strings"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/digest"
	"decisiongateway/shared/guest"
	"decisiongateway/shared/jsonw"
	"decisiongateway/shared/platform"
)

func init() { guest.Serve(handle) }

func main() {}

func query(req *abi.Request, name string) string {
	for _, kv := range strings.Split(req.Query, "&") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

// remembered is changed by /remember: a global, and a map that grows on the
// heap. A call must never see what an earlier call left in them.
var (
	calls      int
	remembered = map[string]string{"init": "kept"}
)

func handle(env *platform.Env, req *abi.Request) abi.Response {
	switch req.Path {
	case "/random":
		// 16 bytes from crypto/rand and a number from math/rand/v2: both
		// must differ from call to call, though every call starts from
		// the memory init left.
		b := make([]byte, 16)
		rand.Read(b)
		return abi.Response{Status: 200, Body: []byte(hex.EncodeToString(b) + " " + strconv.FormatUint(mrand.Uint64(), 16))}
	case "/sha256":
		// The body's SHA-256 from the host's import (shared/digest), in hex.
		sum := digest.SHA256(req.Body)
		return abi.Response{Status: 200, Body: []byte(hex.EncodeToString(sum[:]))}
	case "/remember":
		// Answers what earlier calls left, then leaves some more: the global
		// count, the map's keys, and a new entry holding this call's body.
		calls++
		keys := make([]string, 0, len(remembered))
		for k := range remembered {
			keys = append(keys, k)
		}
		remembered[req.RequestID] = string(req.Body)
		return abi.Response{Status: 200, Body: []byte(strconv.Itoa(calls) + " " + strings.Join(keys, ","))}
	case "/echo":
		// The request comes back whole: metadata as headers, body unchanged.
		h := abi.Headers{
			{Name: "x-echo-method", Value: req.Method},
			{Name: "x-echo-path", Value: req.Path},
			{Name: "x-echo-query", Value: req.Query},
			{Name: "x-echo-client", Value: req.ClientAddr},
			{Name: "x-echo-request-id", Value: req.RequestID},
			{Name: "x-echo-header-count", Value: strconv.Itoa(len(req.Headers))},
		}
		for _, f := range req.Headers {
			if strings.HasPrefix(f.Name, "x-") {
				h = append(h, abi.Header{Name: "x-echo-" + f.Name, Value: f.Value})
			}
		}
		return abi.Response{Status: 200, Headers: h, Body: req.Body}
	case "/big":
		n, _ := strconv.Atoi(query(req, "n"))
		body := make([]byte, n)
		for i := range body {
			body[i] = byte(i * 7)
		}
		return abi.Response{Status: 200, Body: body}
	case "/config":
		return abi.Response{Status: 200, Body: []byte(env.Config.Get(query(req, "name")))}
	case "/ledger":
		res, err := env.Ledger.Exec(&abi.Batch{Steps: []abi.Statement{
			{SQL: "SELECT ?, ?, ?", Args: []abi.Value{abi.Int64(-42), abi.String(string(req.Body)), abi.Bytes(req.Body)}},
		}})
		var w jsonw.Writer
		w.Open('{')
		if err != nil {
			w.FieldString("decodeError", err.Error())
		}
		w.FieldString("err", res.Err)
		if len(res.Steps) == 1 && len(res.Steps[0].Rows) == 1 {
			row := res.Steps[0].Rows[0]
			w.FieldInt("int", row[0].AsInt())
			w.FieldBool("textSame", row[1].AsString() == string(req.Body))
			w.FieldBool("blobSame", string(row[2].Bytes) == string(req.Body))
		}
		w.Close('}')
		return abi.Response{Status: 200, Body: w.B}
	case "/fetch":
		res, err := env.Transport.Fetch(&abi.FetchRequest{
			Method: "POST", URL: string(req.Headers.Get("x-target")), Body: req.Body,
			Headers:    abi.Headers{{Name: "content-type", Value: "application/octet-stream"}},
			Credential: query(req, "credential"),
		})
		if err != nil {
			return abi.Response{Status: 500, Body: []byte(err.Error())}
		}
		h := abi.Headers{{Name: "x-fetch-status", Value: strconv.Itoa(res.Status)}, {Name: "x-fetch-error", Value: res.ErrKind}}
		for _, f := range res.Headers {
			h = append(h, abi.Header{Name: "x-upstream-" + f.Name, Value: f.Value})
		}
		return abi.Response{Status: 200, Headers: h, Body: res.Body}
	case "/await":
		// Hands a fetch to the host (an Await) and answers with what it
		// got once resumed, possibly on another instance.
		if r := req.Resume; r != nil && r.Fetch != nil {
			return abi.Response{Status: 200, Body: append(append([]byte{}, r.State...), r.Fetch.Body...)}
		}
		return abi.Response{Await: &abi.Await{State: []byte("resumed:"), Fetch: &abi.FetchRequest{Method: "POST", URL: "https://upstream.test/", Body: req.Body}}}
	case "/log":
		env.Info("hello from the guest", "answer", "42")
		if len(req.Body) > 0 {
			// What a function might log: text it got from elsewhere.
			env.Warn("guest saw "+string(req.Body), "body", string(req.Body))
		}
		return abi.Response{Status: 204}
	case "/sleep":
		ms, _ := strconv.Atoi(query(req, "ms"))
		time.Sleep(time.Duration(ms) * time.Millisecond)
		return abi.Response{Status: 200, Body: []byte("slept")}
	case "/trap":
		var m map[string]int
		m["boom"] = 1 // nil map write: a Go panic, a trap in the module
	case "/spin":
		// Counts from 1 until it reaches n; with n=0 that is 2^64 steps, and
		// the compiler cannot know n, so the loop really runs.
		n, _ := strconv.ParseUint(query(req, "n"), 10, 64)
		var sum uint64
		for i := uint64(1); i != n; i++ {
			sum += i ^ (sum >> 3)
		}
		return abi.Response{Status: 200, Body: []byte(strconv.FormatUint(sum, 10))}
	case "/scan":
		// Looks n times for the first zero byte of the body and answers
		// the sum of where it was (-1 each time when there is none): the
		// byte loop of a JSON parser's search for a string's closing quote
		// (strings.IndexByte; the project's in TinyGo, scripts/tinygo).
		n, _ := strconv.Atoi(query(req, "n"))
		body, found := string(req.Body), 0
		for range n {
			found += strings.IndexByte(body, 0)
		}
		return abi.Response{Status: 200, Body: []byte(strconv.Itoa(found))}
	case "/time":
		return abi.Response{Status: 200, Body: []byte(time.Now().UTC().Format(time.RFC3339))}
	}
	return abi.Response{Status: 404}
}
