package ledger

import (
	"database/sql/driver"
	"fmt"
	"slices"
	"time"

	"decisiongateway/shared/abi"
)

// driverArgs converts batch arguments into the values drivers bind
// (int64, float64, string, []byte, nil) at the positions of the ? marks. A
// blob is never nil, so an empty blob stays a blob instead of binding as
// NULL.
//
// The values are written into dst's array when it is large enough: the
// writer reuses one for every statement, which drivers may, since they
// bind what the statement's call needs before it returns (go-sqlite3 with
// SQLITE_TRANSIENT, libsql-client-go into the request it sends).
func driverArgs(dst []driver.NamedValue, vals []abi.Value) ([]driver.NamedValue, error) {
	out := slices.Grow(dst[:0], len(vals))[:len(vals)]
	for i, v := range vals {
		out[i].Ordinal = i + 1
		switch v.Kind {
		case abi.Null:
			out[i].Value = nil
		case abi.Integer:
			out[i].Value = v.Int
		case abi.Float:
			out[i].Value = v.Float
		case abi.Text:
			out[i].Value = v.Str
		case abi.Blob:
			if v.Bytes == nil {
				out[i].Value = []byte{}
			} else {
				out[i].Value = v.Bytes
			}
		default:
			return nil, fmt.Errorf("argument %d has unknown kind %d", i+1, v.Kind)
		}
	}
	return out, nil
}

// fromDriver converts a cell as the drivers deliver it. Both drivers give
// int64, float64, string, []byte or nil; time.Time appears only for text in
// date-typed columns (see the package comment) and bool never in practice.
// A blob is copied: a driver may reuse the buffer for its next row.
func fromDriver(v any) abi.Value {
	switch x := v.(type) {
	case nil:
		return abi.Value{}
	case int64:
		return abi.Int64(x)
	case float64:
		return abi.Float64(x)
	case string:
		return abi.String(x)
	case []byte:
		if x == nil {
			return abi.Bytes(nil)
		}
		return abi.Bytes(append([]byte{}, x...))
	case time.Time:
		return abi.String(formatTime(x))
	case bool:
		if x {
			return abi.Int64(1)
		}
		return abi.Int64(0)
	}
	return abi.String(fmt.Sprint(v))
}

// formatTime writes a time in the form SQLite's own date functions produce,
// adding fractional seconds and an offset only when they are present.
func formatTime(t time.Time) string {
	if _, off := t.Zone(); off == 0 {
		return t.Format("2006-01-02 15:04:05.999999999")
	}
	return t.Format("2006-01-02 15:04:05.999999999-07:00")
}
