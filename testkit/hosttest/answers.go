package hosttest

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Answers returns a valid answers object (spec §2.4) for a decision
// request body, as a fake upstream would send it: choice picks the first
// option in name order with uniform probabilities, score has uniform
// probabilities and their weighted mean, noul is 0.5.
func Answers(body []byte) map[string]any {
	var req struct {
		Questions map[string]struct {
			Type     string
			Criteria json.RawMessage
		}
	}
	json.Unmarshal(body, &req)
	answers := map[string]any{}
	for name, q := range req.Questions {
		switch q.Type {
		case "choice":
			var opts map[string]json.RawMessage
			json.Unmarshal(q.Criteria, &opts)
			probs, first := map[string]float64{}, ""
			for o := range opts {
				probs[o] = 1 / float64(len(opts))
				if first == "" || o < first {
					first = o
				}
			}
			answers[name] = map[string]any{"type": "choice", "choice": first, "probabilities": probs, "confidence": 0.5}
		case "score":
			var levels []any
			json.Unmarshal(q.Criteria, &levels)
			probs, legend := map[string]float64{}, map[string]string{}
			for i := range levels {
				probs[strconv.Itoa(i)] = 1 / float64(len(levels))
				legend[strconv.Itoa(i)] = fmt.Sprint(levels[i])
			}
			answers[name] = map[string]any{"type": "score", "score": float64(len(levels)-1) / 2, "probabilities": probs, "confidence": 0.4, "legend": legend}
		case "noul":
			answers[name] = map[string]any{"type": "noul", "noul": 0.5}
		}
	}
	return answers
}
