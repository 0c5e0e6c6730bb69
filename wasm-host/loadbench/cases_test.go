package main

import (
	"strings"
	"testing"
)

// TestCaseLineReportsCPUPerAnswer: the line gives the medians of each
// side's CPU per 2xx answer and of their per-round ratio, sqld's share
// counted on the gateway's side.
func TestCaseLineReportsCPUPerAnswer(t *testing.T) {
	rounds := []roundResult{
		{proxyCPU: 40, gatewayCPU: 200, sqldCPU: 100},
		{proxyCPU: 50, gatewayCPU: 150, sqldCPU: 100},
		{proxyCPU: 60, gatewayCPU: 240, sqldCPU: 60},
	}
	for _, c := range []struct{ ledger, want string }{
		{"embedded", "CPU per 2xx proxy 50µs gateway 200µs (4.0×)"},
		{"sqld", "CPU per 2xx proxy 50µs gateway 200µs + sqld 100µs (5.0×)"},
	} {
		rs := rounds
		if c.ledger == "embedded" {
			rs = nil
			for _, r := range rounds {
				r.sqldCPU = 0
				rs = append(rs, r)
			}
		}
		line := caseLine(benchCase{name: "closed16/small/" + c.ledger, ledger: c.ledger}, rs, 0)
		if !strings.Contains(line, c.want) {
			t.Errorf("%s: %q lacks %q", c.ledger, line, c.want)
		}
	}
	if got := perAnswer(0.5, 2500); got != 200 {
		t.Errorf("perAnswer(0.5 s, 2500) = %v µs, want 200", got)
	}
	if got := perAnswer(0.5, 0); got != 0 {
		t.Errorf("perAnswer without answers = %v, want 0", got)
	}
}

// A ratio just short of its target is never printed as the target itself
// beside FAIL.
func TestRatioNearItsTargetShowsWhichSide(t *testing.T) {
	for _, c := range []struct {
		r, target float64
		decimals  int
		want      string
	}{
		{0.3996, 0.4, 2, "0.3996×"},
		{0.398, 0.4, 2, "0.398×"},
		{0.4, 0.4, 2, "0.40×"},
		{0.4049, 0.4, 2, "0.405×"},
		{0.37, 0.4, 2, "0.37×"},
		{0.93, 0.95, 2, "0.93×"},
		{3.04, 3, 1, "3.04×"},
		{2.96, 3, 1, "2.96×"},
		{3.3, 3, 1, "3.3×"},
		{0.33, 0, 2, "0.33×"},
	} {
		if got := fmtRatio(c.r, c.target, c.decimals); got != c.want {
			t.Errorf("fmtRatio(%v, %v, %d) = %q, want %q", c.r, c.target, c.decimals, got, c.want)
		}
	}
}
