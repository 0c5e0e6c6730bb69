package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// payload is one valid POST /v1/service body (spec §2.1–2.2).
type payload struct {
	Name string
	Body []byte
}

// payloadSpec is the shape of a payload: how many questions, and the body
// size it is padded to.
type payloadSpec struct {
	name      string
	questions int
	bytes     int
}

// payloadSpecs are the three sizes the benchmark sends. large stays under
// the spec's 65,536-byte body limit with room for the model the gateway
// inserts.
var payloadSpecs = []payloadSpec{
	{"small", 1, 300},
	{"medium", 8, 4 << 10},
	{"large", 32, 60 << 10},
}

// markerPrefix starts every payload's state, so the fake upstream can find
// its precomputed answer with one bytes.Index instead of parsing the body.
const markerPrefix = "loadbench:"

// buildPayloads returns the payloads, deterministic from run to run. Each
// cycles through the three question types, and pads the shared state so the
// body is exactly spec.bytes long.
func buildPayloads() ([]payload, error) {
	var out []payload
	for _, s := range payloadSpecs {
		b, err := buildPayload(s)
		if err != nil {
			return nil, err
		}
		out = append(out, payload{Name: s.name, Body: b})
	}
	return out, nil
}

func buildPayload(s payloadSpec) ([]byte, error) {
	// Descriptions take about 40% of the body (markup takes much of the
	// small one); the state pads the rest.
	per := s.bytes * 2 / 5 / s.questions
	questions := map[string]any{}
	for i := 0; i < s.questions; i++ {
		questions["q"+strconv.Itoa(i)] = question(i, per)
	}
	state := markerPrefix + s.name + " "
	body, err := encode(state, questions)
	if err != nil {
		return nil, err
	}
	if len(body) > s.bytes {
		return nil, fmt.Errorf("payload %s: %d bytes before padding, over its %d", s.name, len(body), s.bytes)
	}
	body, err = encode(state+filler(s.bytes-len(body)), questions)
	if err != nil {
		return nil, err
	}
	if len(body) != s.bytes {
		return nil, fmt.Errorf("payload %s: %d bytes, want %d", s.name, len(body), s.bytes)
	}
	return body, nil
}

// question returns question i, of about size bytes: a choice of four
// options, a five-level score, or a noul with both descriptions.
func question(i, size int) map[string]any {
	switch i % 3 {
	case 0:
		d := size / 4
		return map[string]any{
			"type":         "choice",
			"instructions": "which fruit",
			"criteria": map[string]string{
				"apple": filler(d), "pear": filler(d), "plum": filler(d), "cherry": filler(d),
			},
		}
	case 1:
		d := size / 5
		return map[string]any{
			"type":     "score",
			"criteria": []string{filler(d), filler(d), filler(d), filler(d), filler(d)},
		}
	}
	d := size / 2
	return map[string]any{
		"type":     "noul",
		"criteria": map[string]string{"true": filler(d), "false": filler(d)},
	}
}

// encode writes the body compactly, state first (encoding/json sorts map
// keys; the struct keeps state before questions).
func encode(state string, questions map[string]any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(struct {
		State     string         `json:"state"`
		Questions map[string]any `json:"questions"`
	}{state, questions})
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), err
}

// filler is n bytes of plain words (no characters JSON escapes).
func filler(n int) string {
	const words = "a ripe red apple lies on the kitchen table beside a green pear and two dark plums "
	var b []byte
	for len(b) < n {
		b = append(b, words...)
	}
	return string(b[:n])
}

// payloadName returns the name a body's marker carries, or "".
func payloadName(body []byte) string {
	i := bytes.Index(body, []byte(markerPrefix))
	if i < 0 {
		return ""
	}
	rest := body[i+len(markerPrefix):]
	if j := bytes.IndexByte(rest, ' '); j >= 0 {
		return string(rest[:j])
	}
	return ""
}
