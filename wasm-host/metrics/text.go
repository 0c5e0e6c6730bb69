package metrics

import (
	"bytes"
	"strconv"
	"strings"

	vm "github.com/VictoriaMetrics/metrics"

	"decisiongateway/wasm-host/cowmap"
)

// family is one metric family counted by the library: its series live in
// a set of their own, so the host can write the family's HELP and TYPE
// lines itself before them.
type family struct {
	name, kind, help string
	set              *vm.Set
}

// family adds a family to those the host serves, in the order added.
func (h *Host) family(name, kind, help string) *family {
	f := &family{name: name, kind: kind, help: help, set: vm.NewSet()}
	h.families = append(h.families, f)
	return f
}

// write writes the family, or nothing while it has no series (a labelled
// family before its first observation).
func (f *family) write(b *bytes.Buffer) {
	var samples bytes.Buffer
	f.set.WritePrometheus(&samples)
	if samples.Len() == 0 {
		return
	}
	header(b, f.name, f.kind, f.help)
	b.Write(samples.Bytes())
}

// header writes a family's HELP and TYPE lines. help is the package's own
// text: it holds no backslash or line break to escape.
func header(b *bytes.Buffer, name, kind, help string) {
	b.WriteString("# HELP " + name + " " + help + "\n# TYPE " + name + " " + kind + "\n")
}

// sample writes one line of a family the host reads at scrape time.
func sample(b *bytes.Buffer, name string, v int64, labels ...string) {
	b.WriteString(series(name, labels...))
	b.WriteByte(' ')
	b.WriteString(strconv.FormatInt(v, 10))
	b.WriteByte('\n')
}

// series names one series: name{label="value",…}, labels given as name,
// value pairs in the order written (sorted by name, as client libraries
// write them, so scrapes read the same whatever wrote them).
func series(name string, labels ...string) string {
	if len(labels) == 0 {
		return name
	}
	var s strings.Builder
	s.WriteString(name)
	for i := 0; i+1 < len(labels); i += 2 {
		if i == 0 {
			s.WriteByte('{')
		} else {
			s.WriteByte(',')
		}
		s.WriteString(labels[i])
		s.WriteString(`="`)
		labelEscaper.WriteString(&s, labels[i+1])
		s.WriteByte('"')
	}
	s.WriteByte('}')
	return s.String()
}

// labelEscaper escapes a label value as the text format requires.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// vec finds the series of a combination of label values, creating it on
// first sight. The request path takes no lock and allocates nothing
// (cowmap); a new combination copies the map, which happens a bounded
// number of times since every label comes from a closed set.
type vec[K comparable, M any] struct {
	m      cowmap.Map[K, M]
	create func(K) M
}

func (v *vec[K, M]) get(k K) M { return v.m.Get(k, v.create) }
