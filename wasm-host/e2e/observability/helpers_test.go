// Package observability_test serves requests through the real wazero host
// (the TinyGo modules, a real ledger, only the upstream faked) and reads
// what an operator would: the metrics endpoint and the log.
package observability_test

import (
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"decisiongateway/testkit/hosttest"
	"decisiongateway/wasm-host/app"
)

// upstreamKey is the operator's upstream credential: it may reach the fake
// vendor and nothing else, the log included.
const upstreamKey = "sk-operator-observe-7a3c91"

// answerValid answers a decision request as the vendor would.
func answerValid(w http.ResponseWriter, body []byte) {
	out, _ := json.Marshal(map[string]any{"model": "vendor-1", "answers": hosttest.Answers(body), "usage": map[string]int{"input_tokens": 3, "output_tokens": 2}})
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

// start runs a host on ledgerURL in front of vendor, with env added.
func start(t *testing.T, ledgerURL string, vendor *hosttest.Recorder, env ...string) *hosttest.Host {
	e := map[string]string{"LIBSQL_URL": ledgerURL, "UPSTREAM_KIND": "vendor", "UPSTREAM_URL": vendor.URL + "/v1", "UPSTREAM_API_KEY": upstreamKey}
	for i := 0; i+1 < len(env); i += 2 {
		e[env[i]] = env[i+1]
	}
	return hosttest.Start(t, e)
}

const decision = `{"state":"a ripe red apple","questions":{"fruit":{"type":"choice","criteria":{"apple":"an apple","pear":"a pear"}}}}`

type reply struct {
	status int
	header http.Header
}

func send(t *testing.T, h *hosttest.Host, method, path, key, body string) reply {
	t.Helper()
	req, _ := http.NewRequest(method, h.URL+path, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return reply{resp.StatusCode, resp.Header}
}

// scrape is one reading of the metrics: every sample by its series name,
// `name{label="value",…}` with the labels sorted; histograms as their
// _count and _sum.
type scrape map[string]float64

func read(t *testing.T, h *hosttest.Host) scrape {
	t.Helper()
	resp, err := http.Get(h.URL + app.MetricsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("metrics: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("metrics are not the Prometheus text format: %v", err)
	}
	s := scrape{}
	for name, f := range families {
		for _, m := range f.Metric {
			var labels []string
			for _, l := range m.Label {
				labels = append(labels, l.GetName()+"="+`"`+l.GetValue()+`"`)
			}
			sort.Strings(labels)
			key := name + "{" + strings.Join(labels, ",") + "}"
			switch {
			case m.Counter != nil:
				s[key] = m.Counter.GetValue()
			case m.Gauge != nil:
				s[key] = m.Gauge.GetValue()
			case m.Histogram != nil:
				s[strings.Replace(key, "{", "_count{", 1)] = float64(m.Histogram.GetSampleCount())
				s[strings.Replace(key, "{", "_sum{", 1)] = m.Histogram.GetSampleSum()
			case m.Untyped != nil:
				s[key] = m.Untyped.GetValue()
			}
		}
	}
	return s
}

// moved is how much series changed from before to after.
func moved(before, after scrape, series string) float64 { return after[series] - before[series] }

// sum adds the series whose names start with prefix: every version of a
// function, say.
func (s scrape) sum(prefix string) float64 {
	total := 0.0
	for name, v := range s {
		if strings.HasPrefix(name, prefix) {
			total += v
		}
	}
	return total
}
