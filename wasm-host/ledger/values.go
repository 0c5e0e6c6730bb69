package ledger

import (
	"database/sql"
	"fmt"
	"time"

	"decisiongateway/shared/abi"
)

// driverArgs converts batch arguments into the types database/sql passes to
// drivers unchanged. A blob is never nil, so an empty blob stays a blob
// instead of binding as NULL.
func driverArgs(vals []abi.Value) ([]any, error) {
	if len(vals) == 0 {
		return nil, nil
	}
	out := make([]any, len(vals))
	for i, v := range vals {
		switch v.Kind {
		case abi.Null:
			out[i] = nil
		case abi.Integer:
			out[i] = v.Int
		case abi.Float:
			out[i] = v.Float
		case abi.Text:
			out[i] = v.Str
		case abi.Blob:
			if v.Bytes == nil {
				out[i] = []byte{}
			} else {
				out[i] = v.Bytes
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
		return abi.Bytes(x)
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

// collect reads every row of a result set. Scanning into *any makes
// database/sql copy []byte cells, so the driver may reuse its buffers.
func collect(rows *sql.Rows) ([]string, [][]abi.Value, error) {
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, nil, err
	}
	cells := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range cells {
		ptrs[i] = &cells[i]
	}
	var out [][]abi.Value
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, nil, err
		}
		row := make([]abi.Value, len(cols))
		for i, c := range cells {
			row[i] = fromDriver(c)
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	return cols, out, rows.Close()
}
