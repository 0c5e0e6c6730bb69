package canary

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Policy is how a canary step is judged against the stable version
// (analysis.go). MinSamples is also the exposure bound: a step admits at
// most MinSamples canary requests, fleet-wide, before its first verdict.
type Policy struct {
	// MaxErrorRate is how far the canary's error rate may exceed the
	// stable version's over the same window, as a fraction (0.05: five
	// points).
	MaxErrorRate float64
	// MinSamples is the number of canary requests, fleet-wide, a step
	// needs before it can pass.
	MinSamples int64
	// MaxLatencyRatio is how many times slower than the stable version
	// the canary's mean function time may be.
	MaxLatencyRatio float64
}

// DefaultPolicy is used when an operator names none: five points above
// stable's error rate, after 100 requests, at most 1.5 times as slow.
var DefaultPolicy = Policy{MaxErrorRate: 0.05, MinSamples: 100, MaxLatencyRatio: 1.5}

// Step is one share of a rollout plan.
type Step struct {
	Share int  // basis points
	Gate  bool // after passing, wait for `gateway release advance`
}

// Rollout is what `gateway release canary` asks for: the plan, how each
// step is judged, and how long it lasts at least.
type Rollout struct {
	Steps  []Step
	Policy Policy
	Pause  time.Duration // least time a step lasts, even with its sample full
	// Force lets a version that failed analysis before be tried again.
	Force bool
}

// ParseSteps reads a plan such as "1,10,50" or "1,10!,50" (percentages,
// increasing; "!" makes the step wait for an operator once it passed).
// One share is a single step.
func ParseSteps(s string) ([]Step, error) {
	var out []Step
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		gate := strings.HasSuffix(f, "!")
		bp, ok := ParsePercent(strings.TrimSuffix(f, "!"))
		if !ok {
			return nil, fmt.Errorf("step %q: want a percentage from 0 to 100 with at most two decimals", f)
		}
		if len(out) > 0 && bp <= out[len(out)-1].Share {
			return nil, errors.New("steps must grow: each share larger than the one before")
		}
		out = append(out, Step{Share: bp, Gate: gate})
	}
	return out, nil
}

// encodeSteps is the steps column: basis points, "!" for a gate.
func encodeSteps(steps []Step) string {
	parts := make([]string, len(steps))
	for i, s := range steps {
		parts[i] = strconv.Itoa(s.Share)
		if s.Gate {
			parts[i] += "!"
		}
	}
	return strings.Join(parts, ",")
}

// decodeSteps reads the steps column; a row written before rollouts (or a
// share set directly) is one step of share.
func decodeSteps(col string, share int) []Step {
	var out []Step
	for _, f := range strings.Split(col, ",") {
		bp, err := strconv.Atoi(strings.TrimSuffix(f, "!"))
		if err != nil {
			return []Step{{Share: share}}
		}
		out = append(out, Step{Share: bp, Gate: strings.HasSuffix(f, "!")})
	}
	return out
}

// FormatSteps prints a plan as an operator writes it: "1.00% → 10.00%! → 50.00%".
func FormatSteps(steps []Step) string {
	parts := make([]string, len(steps))
	for i, s := range steps {
		parts[i] = FormatPercent(s.Share)
		if s.Gate {
			parts[i] += "!"
		}
	}
	return strings.Join(parts, " → ")
}
