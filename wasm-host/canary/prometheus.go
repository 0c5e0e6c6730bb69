package canary

import "io"

// WritePrometheus writes the per-version families of MetricsPath in the
// Prometheus text format, for the host-wide metrics endpoint
// (wasm-host/metrics), which serves them beside the host's own.
func (t *Table) WritePrometheus(w io.Writer) { writePrometheus(w, t.Metrics()) }
