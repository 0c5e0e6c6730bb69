package validate

import (
	"strconv"

	"decisiongateway/shared/jsonw"
)

// Error is a rejected body: the HTTP status, the stable code a client
// classifies by (X-Service-Error-Code, listed in schema/errors.md) and a
// message for humans that names the offending JSON path. Pass the three
// fields to policy.Error unchanged.
type Error struct {
	Status  int
	Code    string
	Message string
}

// Error implements the error interface.
func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Stable error codes. They are wire values: schema/errors.md documents each
// one and tests assert them by their literal text, so renaming one is a
// breaking change.
const (
	codeBodyTooLarge      = "body_too_large"
	codeInvalidJSON       = "invalid_json"
	codeTooDeep           = "json_too_deep"
	codeDuplicateKey      = "duplicate_key"
	codeNumberRange       = "number_out_of_range"
	codeBodyNotObject     = "body_not_object"
	codeMissingState      = "missing_state"
	codeInvalidState      = "invalid_state"
	codeInvalidQuestions  = "invalid_questions"
	codeTooManyQuestions  = "too_many_questions"
	codeInvalidQuestion   = "invalid_question"
	codeInvalidName       = "invalid_question_name"
	codeInvalidType       = "invalid_question_type"
	codeInvalidInstr      = "invalid_instructions"
	codeInvalidCriteria   = "invalid_criteria"
	codeTooManyOptions    = "too_many_options"
	codeInvalidOption     = "invalid_option_name"
	codeTooManyLevels     = "too_many_levels"
	codeInvalidModel      = "invalid_model"
	codeInvalidUpstream   = "invalid_upstream_answer"
	statusBadRequest      = 400
	statusTooLarge        = 413
	statusBadGateway      = 502
	maxPathNameInMessages = 48
)

// statusOf maps a code to its HTTP status: everything the client sent wrong
// is 400, except a body over the size limit (413); an upstream answer that
// breaks the contract is the gateway's upstream failing (502).
func statusOf(code string) int {
	switch code {
	case codeBodyTooLarge:
		return statusTooLarge
	case codeInvalidUpstream:
		return statusBadGateway
	}
	return statusBadRequest
}

// pathSeg is one step of a JSON path: an object key, or an array index when
// idx >= 0. Keys alias the parser's buffer; they are only rendered into a
// message when validation fails.
type pathSeg struct {
	key string
	idx int
}

// renderPath writes a path the way a person would type it:
// questions.q1.criteria, state.items[3], questions["a b"].type. Long names
// are shortened so a 64 KiB key cannot make a 64 KiB message.
func renderPath(segs []pathSeg) string {
	var b []byte
	for i, s := range segs {
		switch {
		case s.idx >= 0:
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(s.idx), 10)
			b = append(b, ']')
		case simpleName(s.key):
			if i > 0 {
				b = append(b, '.')
			}
			b = append(b, s.key...)
		default:
			k := s.key
			if r := []rune(k); len(r) > maxPathNameInMessages {
				k = string(r[:maxPathNameInMessages]) + "…"
			}
			b = append(b, '[')
			b = jsonw.AppendString(b, k)
			b = append(b, ']')
		}
	}
	return string(b)
}

func simpleName(s string) bool {
	if s == "" || len(s) > maxPathNameInMessages {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}
