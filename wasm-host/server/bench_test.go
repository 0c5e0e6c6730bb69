package server

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/wasm-host/metrics"
	"decisiongateway/wasm-host/routes"
)

type answer struct{}

func (answer) Handle(context.Context, *abi.Request) (abi.Response, error) {
	return abi.Response{Status: 200, Headers: abi.Headers{{Name: "x-service-credits", Value: "1"}}, Body: []byte(`{}`)}, nil
}

// BenchmarkServeHTTP is the server's own cost per request around a function
// that answers at once, without and with the host's metrics: what counting
// an answer adds to every request.
func BenchmarkServeHTTP(b *testing.B) {
	for _, c := range []struct {
		name     string
		observer Observer
	}{{"plain", nil}, {"metrics", metrics.New(routes.Table, "bench")}} {
		b.Run(c.name, func(b *testing.B) {
			s := &Server{Routes: routes.Table, Functions: map[string]Handler{"config": answer{}}, Timeout: time.Minute,
				Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Observer: c.observer}
			req := httptest.NewRequest("GET", "/api/service/config", nil)
			b.ReportAllocs()
			for b.Loop() {
				s.ServeHTTP(httptest.NewRecorder(), req)
			}
		})
	}
}
