//go:build linux

package wranglercompat_test

import "testing"

// TestShimUnits runs the JavaScript unit tests of the shim (test/*.test.mjs)
// with Node's test runner: settings, routing, durations, the WASI clock and
// the fetch policy. runNode fails the test with the runner's report.
func TestShimUnits(t *testing.T) {
	runNode(t, "", "--test", "--test-reporter=dot", "test/shim.test.mjs")
}
