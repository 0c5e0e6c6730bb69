package main

import (
	"strings"
	"testing"
)

// TestReleaseFlagsAnywhere: `gateway release` reads its flags before,
// between or after the arguments, with one dash or two, and refuses an
// unknown flag by name instead of taking it for an argument.
func TestReleaseFlagsAnywhere(t *testing.T) {
	pos, flags, err := splitFlags([]string{"--pause=1m", "canary", "decide", "d.wasm", "1,10,50", "-min-samples", "40", "--force"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(pos, " ") != "canary decide d.wasm 1,10,50" || flags["min-samples"] != "40" || flags["force"] != "true" || flags["pause"] != "1m" {
		t.Fatalf("pos %q flags %v", pos, flags)
	}
	for args, want := range map[string]string{
		"canary decide d.wasm 10 -dry-run":      "unknown flag -dry-run",
		"canary decide d.wasm 10 --force=yes":   "takes no value",
		"canary decide d.wasm 10 --min-samples": "needs a value",
	} {
		if _, _, err := splitFlags(strings.Fields(args)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
	r, err := rolloutFlags("1,10!,50", map[string]string{"max-latency-ratio": "2", "pause": "30s"})
	if err != nil || len(r.Steps) != 3 || !r.Steps[1].Gate || r.Policy.MaxLatencyRatio != 2 || r.Pause.Seconds() != 30 {
		t.Fatalf("rollout %+v, %v", r, err)
	}
	for _, bad := range []string{"10,5", "0.001", "ten"} {
		if _, err := rolloutFlags(bad, nil); err == nil {
			t.Errorf("steps %q accepted", bad)
		}
	}
}
