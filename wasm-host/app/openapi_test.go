package app_test

import (
	"bytes"
	"testing"

	"decisiongateway/schema"
	"decisiongateway/testkit/hosttest"
)

// The host serves the committed OpenAPI document as it is, to any origin,
// and answers other methods there as at the probes.
func TestOpenAPIDocumentIsServed(t *testing.T) {
	srv := hosttest.Start(t, nil).Server
	status, h, body := probe(t, "GET", srv.URL+"/openapi.json")
	if status != 200 || !bytes.Equal(body, schema.OpenAPI) || h.Get("Content-Type") != "application/json; charset=utf-8" || h.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("GET /openapi.json: %d %v %.100s", status, h, body)
	}
	if status, _, body := probe(t, "HEAD", srv.URL+"/openapi.json"); status != 200 || len(body) != 0 {
		t.Errorf("HEAD /openapi.json: %d %q", status, body)
	}
	if status, h, _ := probe(t, "POST", srv.URL+"/openapi.json"); status != 405 || h.Get("X-Service-Error-Code") != "method_not_allowed" || h.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /openapi.json: %d %v", status, h)
	}
}
