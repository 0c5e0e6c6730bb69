package settings

import (
	"testing"

	"decisiongateway/shared/platform"
)

// countingSource is a comparable Config that counts its reads.
type countingSource struct {
	m     *platform.MapConfig
	reads *int
}

func (c countingSource) Get(name string) string { *c.reads++; return (*c.m)[name] }

// After Fix, Read of that source returns what Fix read without reading it
// again; any other source is read as before.
func TestFixedSourceIsReadOnce(t *testing.T) {
	t.Cleanup(func() { fixed, fixedFrom = Settings{}, nil })
	m := platform.MapConfig{"SERVICE_RATE_LIMIT": "7", "GATEWAY_REQUEST_TIMEOUT": "3s"}
	reads := 0
	src := countingSource{&m, &reads}
	Fix(src)
	after := reads
	m["SERVICE_RATE_LIMIT"] = "9"
	for range 3 {
		if s := Read(src); s.RateLimit != 7 || s.RequestTimeout.String() != "3s" {
			t.Fatalf("Read of the fixed source = rate %d, timeout %s; want 7, 3s", s.RateLimit, s.RequestTimeout)
		}
	}
	if reads != after {
		t.Errorf("the fixed source was read %d more times", reads-after)
	}
	if s := Read(platform.MapConfig{"SERVICE_RATE_LIMIT": "9"}); s.RateLimit != 9 {
		t.Errorf("another source: rate %d, want 9", s.RateLimit)
	}
}
