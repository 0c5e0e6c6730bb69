package validate

import (
	"strconv"

	"decisiongateway/shared/contract"
	"decisiongateway/shared/jsonw"
)

// Error is a rejected body: the stable code a client classifies by
// (X-Service-Error-Code; its status comes from the contract's table) and a
// message for humans that names the offending JSON path. Pass both to
// policy.Error unchanged.
type Error struct {
	Code    contract.Code
	Message string
}

// Error implements the error interface.
func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Status is the HTTP status of the code (contract.Errors).
func (e *Error) Status() int { return e.Code.Status() }

// maxPathNameInMessages bounds a name quoted in a message, so a 64 KiB
// key cannot make a 64 KiB message.
const maxPathNameInMessages = 48

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
