package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// runProxy is the `proxy` subcommand: the baseline, a bare
// httputil.ReverseProxy to the upstream, in its own process so its cold
// start and memory compare with the gateway's process to process.
//
// Its transport keeps up to 1024 idle connections per host (the default
// keeps 2): with hundreds of concurrent requests the default would open and
// close a connection per request, and the baseline would measure that
// churn instead of a proxy. The gateway's egress client likewise raises it.
//
// It reads each request body whole before forwarding it, as the gateway
// does. Streaming it instead hits golang/go#40747 under load: once the
// upstream has answered, the server closes the inbound body while the
// transport still reads it, the transport drops the upstream connection,
// and the client gets a cut answer (unexpected EOF).
func runProxy(args []string) error {
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	upstream := fs.String("upstream", "", "upstream root URL (http://host:port)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	target, err := url.Parse(*upstream)
	if err != nil || target.Host == "" {
		return fmt.Errorf("proxy: -upstream %q is not a URL", *upstream)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 1024
	rp.Transport = t
	srv := &http.Server{Addr: *addr, Handler: wholeBody(rp), ReadHeaderTimeout: 10 * time.Second}
	return srv.ListenAndServe()
}

// startProxy re-executes this program as `proxy` on a free port.
func startProxy(dir, upstream string) (*process, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	return startProcess("proxy", filepath.Join(dir, "proxy.log"), addr, nil,
		self, "proxy", "-addr", addr, "-upstream", upstream)
}

// wholeBody reads the request body into memory before next sees it.
func wholeBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.ContentLength = int64(len(b))
		next.ServeHTTP(w, r)
	})
}
