// Package childproc ties a long-lived helper process (sqld, a gateway or
// proxy under the load benchmark, wrangler dev) to the process that
// started it. A benchmark interrupted with ^C or a test binary killed at
// its timeout otherwise leaves its children running as orphans that keep
// their ports and their CPU, and skew whatever is measured next.
package childproc
