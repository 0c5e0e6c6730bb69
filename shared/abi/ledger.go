package abi

// ValueKind tags a SQL value on the wire.
type ValueKind uint8

const (
	Null ValueKind = iota
	Integer
	Float
	Text
	Blob
)

// Value is one SQL parameter or result cell.
type Value struct {
	Kind  ValueKind
	Int   int64
	Float float64
	Str   string // Text
	Bytes []byte // Blob
}

// Int64 makes an integer value.
func Int64(v int64) Value { return Value{Kind: Integer, Int: v} }

// String makes a text value.
func String(v string) Value { return Value{Kind: Text, Str: v} }

// Float64 makes a real value.
func Float64(v float64) Value { return Value{Kind: Float, Float: v} }

// Bytes makes a blob value.
func Bytes(v []byte) Value { return Value{Kind: Blob, Bytes: v} }

// NullValue is SQL NULL.
func NullValue() Value { return Value{} }

// AsInt returns the value as an integer (text and reals are not converted).
func (v Value) AsInt() int64 {
	switch v.Kind {
	case Integer:
		return v.Int
	case Float:
		return int64(v.Float)
	}
	return 0
}

// AsString returns text or blob content as a string.
func (v Value) AsString() string {
	switch v.Kind {
	case Text:
		return v.Str
	case Blob:
		return string(v.Bytes)
	}
	return ""
}

// Truthy reports whether SQL would treat the value as true.
func (v Value) Truthy() bool {
	switch v.Kind {
	case Integer:
		return v.Int != 0
	case Float:
		return v.Float != 0
	case Text:
		return v.Str != "" && v.Str != "0"
	case Blob:
		return len(v.Bytes) > 0
	}
	return false
}

// CondTest is what a condition checks about an earlier step of a batch.
type CondTest uint8

const (
	// Affected: the step ran and changed at least one row.
	Affected CondTest = iota + 1
	// NotAffected: the step was skipped or changed no row.
	NotAffected
	// Truthy: the step ran and the first column of its first row is true.
	Truthy
	// Falsy: the step was skipped, returned no row, or its first cell is false.
	Falsy
)

// Cond makes a step depend on an earlier one.
type Cond struct {
	Step int
	Test CondTest
}

// Statement is one step of a batch. It runs only when every condition in
// When holds; otherwise it is skipped and reported as not executed.
type Statement struct {
	SQL  string
	Args []Value
	When []Cond
}

// Batch is executed atomically by the host: every step that runs commits
// together, or none does. Conditions are evaluated inside the transaction, so
// a batch can check and change state with no interactive round trips.
type Batch struct {
	Steps []Statement
}

// StepResult is the outcome of one step.
type StepResult struct {
	Executed     bool
	RowsAffected int64
	LastInsertID int64
	Columns      []string
	Rows         [][]Value
}

// First returns the first cell of the first row, or Null.
func (s *StepResult) First() Value {
	if len(s.Rows) == 0 || len(s.Rows[0]) == 0 {
		return Value{}
	}
	return s.Rows[0][0]
}

// BatchResult is the outcome of a batch. When Err is set nothing was
// committed and Steps is empty.
type BatchResult struct {
	Steps []StepResult
	Err   string
}

// Holds reports whether c holds given the results so far.
func (c Cond) Holds(done []StepResult) bool {
	if c.Step < 0 || c.Step >= len(done) {
		return false
	}
	s := &done[c.Step]
	switch c.Test {
	case Affected:
		return s.Executed && s.RowsAffected > 0
	case NotAffected:
		return !s.Executed || s.RowsAffected == 0
	case Truthy:
		return s.Executed && s.First().Truthy()
	case Falsy:
		return !s.Executed || !s.First().Truthy()
	}
	return false
}
