package interrupt

import (
	"errors"
	"fmt"
)

// This file walks instruction sequences: function bodies and constant
// expressions. The walk only needs instruction boundaries, so it decodes
// every immediate by its shape and keeps nothing else. wazero validates the
// module afterwards; the walk's duty is narrower: never mistake an
// immediate for an opcode. So every opcode it does not know is an error.

// Immediate shapes of the one-byte opcodes.
const (
	opUnknown  uint8 = iota // not in the table: refused
	opNone                  // no immediate
	opBlock                 // block, if: a block type
	opLoop                  // loop: a block type; the check goes after it
	opEnd                   // end of a block or of the sequence
	opIndex                 // one u32: label, function, local, global, table, memory or element index
	opIndex2                // two u32: call_indirect (type, table)
	opMemarg                // loads and stores: align and offset, both u32
	opBrTable               // a vector of labels, then the default label
	opI32                   // i32.const: signed LEB128, at most 5 bytes
	opI64                   // i64.const: signed LEB128, at most 10 bytes
	opF32                   // f32.const: 4 bytes
	opF64                   // f64.const: 8 bytes
	opSelectT               // select with a vector of value types
	opRefNull               // ref.null: a reference type
	opPrefixFC              // saturating truncation, bulk memory, table operations
	opPrefixFD              // SIMD
	opTailCall              // return_call, return_call_indirect: refused, see below
)

var opShape = func() (t [256]uint8) {
	set := func(shape uint8, ops ...byte) {
		for _, op := range ops {
			t[op] = shape
		}
	}
	set(opNone, 0x00, 0x01, 0x05, 0x0F, 0x1A, 0x1B, 0xD1) // unreachable nop else return drop select ref.is_null
	set(opBlock, 0x02, 0x04)
	set(opLoop, 0x03)
	set(opEnd, 0x0B)
	set(opIndex, 0x0C, 0x0D, 0x10) // br br_if call
	set(opIndex2, 0x11)            // call_indirect
	set(opTailCall, 0x12, 0x13)
	set(opBrTable, 0x0E)
	set(opSelectT, 0x1C)
	set(opIndex, 0x20, 0x21, 0x22, 0x23, 0x24) // local.get/set/tee global.get/set
	set(opIndex, 0x25, 0x26)                   // table.get/set
	for op := 0x28; op <= 0x3E; op++ {         // i32.load … i64.store32
		t[op] = opMemarg
	}
	set(opIndex, 0x3F, 0x40) // memory.size, memory.grow (memory index)
	set(opI32, 0x41)
	set(opI64, 0x42)
	set(opF32, 0x43)
	set(opF64, 0x44)
	for op := 0x45; op <= 0xC4; op++ { // numeric operators, sign extension (0xC0–0xC4)
		t[op] = opNone
	}
	set(opRefNull, 0xD0)
	set(opIndex, 0xD2) // ref.func
	set(opPrefixFC, 0xFC)
	set(opPrefixFD, 0xFD)
	return t
}()

// fast describes, per opcode, walk's fast path: the instructions whose
// immediates are nothing but LEB128 numbers (up to two) the walk need not
// read. When every one of them is one byte, which is most of the time, the
// instruction's length is known from the opcode and two bytes after it,
// without a branch on what kind of instruction it is.
type fastOp struct {
	leb    uint8 // how many LEB128 immediates; 0xFF: not on the fast path
	m1, m2 uint8 // masks of the bytes after the opcode that must be 0 for one-byte immediates
	max    uint8 // most bytes an immediate may take
	depth  int8  // +1 opens a block (block, if: the immediate is a block type), -1 closes one
}

const notFast = 0xFF

// blockByte marks the one-byte block types: empty, a value type, or a type
// index below 64.
var blockByte = func() (t [256]bool) {
	for c := range 0x40 {
		t[c] = true
	}
	for _, c := range []byte{0x40, 0x7F, 0x7E, 0x7D, 0x7C, 0x7B, 0x70, 0x6F} {
		t[c] = true
	}
	return t
}()

var fast = func() (t [256]fastOp) {
	for op, shape := range opShape {
		switch shape {
		case opNone:
			t[op] = fastOp{leb: 0, max: 5}
		case opEnd:
			t[op] = fastOp{leb: 0, max: 5, depth: -1}
		case opBlock:
			// A one-byte block type; blockByte tells whether it is one
			// this walker knows.
			t[op] = fastOp{leb: 1, m1: 0x80, max: 5, depth: 1}
		case opIndex, opI32:
			t[op] = fastOp{leb: 1, m1: 0x80, max: 5}
		case opI64:
			t[op] = fastOp{leb: 1, m1: 0x80, max: 10}
		case opIndex2:
			t[op] = fastOp{leb: 2, m1: 0x80, m2: 0x80, max: 5}
		case opMemarg:
			// Bit 6 of the alignment would add a memory index
			// (multi-memory): the switch refuses it.
			t[op] = fastOp{leb: 2, m1: 0xC0, m2: 0x80, max: 5}
		default:
			t[op] = fastOp{leb: notFast}
		}
	}
	return t
}()

// fastFor is fast per walk mode (walker.mode): with call and ref.func
// taken off the fast path when function indices are renumbered (their
// immediates must be read), global.get and global.set when global indices
// are checked, and global.set when the budget global is guarded (every
// global.set must be seen).
var fastFor = func() (t [8][256]fastOp) {
	for m := range t {
		t[m] = fast
		if m&modeRenumber != 0 {
			t[m][0x10] = fastOp{leb: notFast}
			t[m][0xD2] = fastOp{leb: notFast}
		}
		if m&modeGlobals != 0 {
			t[m][0x23] = fastOp{leb: notFast}
			t[m][0x24] = fastOp{leb: notFast}
		}
		if m&modeGuard != 0 {
			t[m][0x24] = fastOp{leb: notFast}
		}
	}
	return t
}()

// fcImmediates is the number of u32 immediates of each 0xFC instruction:
// 0–7 saturating truncation; 8 memory.init (data, memory), 9 data.drop,
// 10 memory.copy (memory, memory), 11 memory.fill, 12 table.init (element,
// table), 13 elem.drop, 14 table.copy (table, table), 15 table.grow,
// 16 table.size, 17 table.fill.
var fcImmediates = [...]uint8{0, 0, 0, 0, 0, 0, 0, 0, 2, 1, 2, 1, 2, 1, 2, 1, 1, 1}

var (
	errTruncated = errors.New("truncated")
	errLEB       = errors.New("LEB128 number too long")
)

// skipLEB steps over one LEB128 number of at most max bytes.
func skipLEB(b []byte, i, end, max int) (int, error) {
	for n := 0; n < max; n++ {
		if i >= end {
			return i, errTruncated
		}
		c := b[i]
		i++
		if c < 0x80 {
			return i, nil
		}
	}
	return i, errLEB
}

// readU32 decodes an unsigned LEB128 u32.
func readU32(b []byte, i, end int) (uint32, int, error) {
	return readLEB32(b, i, end, false)
}

// readS32 decodes a signed LEB128 i32 (an i32.const's immediate).
func readS32(b []byte, i, end int) (int32, int, error) {
	v, i, err := readLEB32(b, i, end, true)
	return int32(v), i, err
}

// readLEB32 decodes a LEB128 number of at most five bytes, keeping its low
// 32 bits: an unsigned one must fit them, a signed one is sign-extended.
func readLEB32(b []byte, i, end int, signed bool) (uint32, int, error) {
	var v uint32
	for shift := uint(0); shift < 35; shift += 7 {
		if i >= end {
			return 0, i, errTruncated
		}
		c := b[i]
		i++
		v |= uint32(c&0x7F) << shift
		if c < 0x80 {
			if !signed && shift == 28 && c > 0x0F {
				return 0, i, errLEB
			}
			if signed && c&0x40 != 0 && shift < 25 {
				v |= ^uint32(0) << (shift + 7)
			}
			return v, i, nil
		}
	}
	return 0, i, errLEB
}

// appendU32 appends v as unsigned LEB128, shortest form.
func appendU32(b []byte, v uint32) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// appendU32Width appends v as unsigned LEB128 in width bytes, padded with
// continuation bytes, or in as many as v needs if that is more.
func appendU32Width(b []byte, v uint32, width int) []byte {
	for n := max(width, lenU32(v)); n > 1; n-- {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func lenU32(v uint32) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// isValType reports whether c is a value type this walker understands:
// i32 i64 f32 f64 v128 funcref externref. The typed references of the GC
// and function-references proposals take more bytes and are refused.
func isValType(c byte) bool {
	switch c {
	case 0x7F, 0x7E, 0x7D, 0x7C, 0x7B, 0x70, 0x6F:
		return true
	}
	return false
}

// blockType steps over a block type: 0x40 (empty), one value type, or a
// type index as a non-negative signed LEB128 (s33).
func blockType(b []byte, i, end int) (int, error) {
	if i >= end {
		return i, errTruncated
	}
	c := b[i]
	if c == 0x40 || isValType(c) {
		return i + 1, nil
	}
	// A type index. One byte with bit 6 set would be negative: some other
	// type encoding, not ours to guess.
	j, err := skipLEB(b, i, end, 5)
	if err != nil {
		return j, err
	}
	if b[j-1]&0x40 != 0 {
		return i, fmt.Errorf("unknown block type 0x%02x", c)
	}
	return j, nil
}

// A walker is what walk needs besides the bytes: how to treat function
// indices and the budget global, and the edits found so far. The zero
// walker is not usable; start from newWalker.
type walker struct {
	// shift: function indices at or above it move up by one, the yield
	// import being inserted there; noShift leaves every index alone.
	// funcs: the number of functions before instrumenting; an index at or
	// above it is refused (renumbering it could make it valid).
	shift, funcs uint32
	// globals: the number of globals before instrumenting, or noShift. A
	// global.get or global.set of an index at or above it is refused: it
	// would be the budget once that is added, and a module that sets its
	// budget need never yield.
	globals uint32
	// guard: the budget global, in a walk that verifies an instrumented
	// module, which may set it only inside a check, at setAt from the
	// check's start; noGuard otherwise.
	guard int
	setAt [2]int
	// checkLen: the bytes a check adds at each loop body's start.
	checkLen int
	// edits: where the output differs from the input, in order: an offset
	// shifted left by one, its low bit editCheck (insert the check there)
	// or editIndex (a function index starts there, to be renumbered).
	edits []int
	// grow: how many bytes the edits add.
	grow int
}

const (
	editCheck = 0
	editIndex = 1

	noShift = ^uint32(0)
	noGuard = -1

	// walk modes, indexing fastFor
	modeRenumber = 1
	modeGuard    = 2
	modeGlobals  = 4
)

// newWalker returns a walker that renumbers nothing and guards nothing.
func newWalker() walker {
	return walker{shift: noShift, funcs: noShift, globals: noShift, guard: noGuard}
}

// fresh returns a walker with w's settings and no edits.
func (w *walker) fresh() walker {
	c := *w
	c.edits, c.grow = nil, 0
	return c
}

func (w *walker) mode() int {
	m := 0
	if w.shift != noShift {
		m |= modeRenumber
	}
	if w.guard != noGuard {
		m |= modeGuard
	}
	if w.globals != noShift {
		m |= modeGlobals
	}
	return m
}

// funcIndex steps over a function index at b[i:], recording its
// renumbering. A walk that renumbers refuses an index past the functions
// the module has.
func (w *walker) funcIndex(b []byte, i, end int) (int, error) {
	v, j, err := readU32(b, i, end)
	if err != nil {
		return j, err
	}
	if w.shift == noShift {
		return j, nil
	}
	if v >= w.funcs {
		return i, fmt.Errorf("function index %d out of range (%d functions)", v, w.funcs)
	}
	if v >= w.shift {
		// Written back in as many bytes as it had (a padded LEB128 stays
		// padded), or one more when v+1 needs it.
		if n := lenU32(v + 1); n > j-i {
			w.grow += n - (j - i)
		}
		w.edits = append(w.edits, i<<1|editIndex)
	}
	return j, nil
}

// inCheck reports whether a global.set of the guarded global at offset at
// is one of the two in the check that starts the innermost loop body seen
// so far. It is only a candidate: the caller verifies afterwards that the
// check is there, byte for byte.
func (w *walker) inCheck(at int) bool {
	n := len(w.edits)
	if n == 0 || w.edits[n-1]&1 != editCheck {
		return false
	}
	d := at - w.edits[n-1]>>1
	return d == w.setAt[0] || d == w.setAt[1]
}

// constExpr walks a constant expression (a global's initializer, an
// element segment's offset or item), recording renumbered ref.func
// indices. A loop has no place there.
func (w *walker) constExpr(b []byte, i, end int) (int, error) {
	n := len(w.edits)
	j, err := walk(b, i, end, w)
	if err != nil {
		return j, err
	}
	for _, e := range w.edits[n:] {
		if e&1 == editCheck {
			return i, errors.New("loop in a constant expression")
		}
	}
	return j, nil
}

// walk steps over the instruction sequence starting at b[i] up to and
// including the end that closes it, which must come before end. It records
// in w an editCheck at the offset just past each loop's block type, where
// a loop body's first instruction begins, and an editIndex at each call
// and ref.func immediate to renumber; it returns the offset after the
// closing end.
func walk(b []byte, i, end int, w *walker) (int, error) {
	tab := &fastFor[w.mode()]
	depth := 0
	for i < end {
		at := i
		op := b[i]
		i++
		f := &tab[op]
		if f.leb != notFast {
			if i+1 < end && b[i]&f.m1|b[i+1]&f.m2 == 0 && (f.depth <= 0 || blockByte[b[i]]) {
				i += int(f.leb)
				if depth += int(f.depth); depth < 0 {
					return i, nil // the end of the sequence
				}
				continue
			}
			// A longer immediate. Block types, and an alignment with
			// bit 6 set, go on to the switch.
			if f.depth == 0 && (f.m1 != 0xC0 || i < end && b[i] < 0x40) {
				for n := f.leb; n > 0; n-- {
					var err error
					if i, err = skipLEB(b, i, end, int(f.max)); err != nil {
						return at, fmt.Errorf("offset %d: opcode 0x%02x: %w", at, op, err)
					}
				}
				continue
			}
		}
		var err error
		switch opShape[op] {
		case opNone:
		case opBlock:
			depth++
			i, err = blockType(b, i, end)
		case opLoop:
			depth++
			if i, err = blockType(b, i, end); err == nil {
				w.edits = append(w.edits, i<<1|editCheck)
				w.grow += w.checkLen
			}
		case opEnd:
			if depth == 0 {
				return i, nil
			}
			depth--
		case opIndex:
			if op == 0x10 || op == 0xD2 { // call, ref.func
				i, err = w.funcIndex(b, i, end)
				break
			}
			var index uint32
			if index, i, err = readU32(b, i, end); err != nil || op != 0x23 && op != 0x24 {
				break
			}
			if w.globals != noShift && index >= w.globals {
				return at, fmt.Errorf("offset %d: global index %d out of range (%d globals)", at, index, w.globals)
			}
			if op == 0x24 && int(index) == w.guard && !w.inCheck(at) {
				return at, fmt.Errorf("offset %d: global.set of the budget global outside a check", at)
			}
		case opIndex2:
			if i, err = skipLEB(b, i, end, 5); err == nil {
				i, err = skipLEB(b, i, end, 5)
			}
		case opMemarg:
			var align uint32
			if align, i, err = readU32(b, i, end); err == nil {
				if align >= 0x40 { // bit 6: a memory index follows (multi-memory)
					return at, fmt.Errorf("offset %d: memory access with a memory index (multi-memory) is not supported", at)
				}
				i, err = skipLEB(b, i, end, 5)
			}
		case opBrTable:
			var n uint32
			if n, i, err = readU32(b, i, end); err == nil {
				if int(n) > end-i {
					err = errTruncated
					break
				}
				for k := uint32(0); k <= n && err == nil; k++ {
					i, err = skipLEB(b, i, end, 5)
				}
			}
		case opI32:
			i, err = skipLEB(b, i, end, 5)
		case opI64:
			i, err = skipLEB(b, i, end, 10)
		case opF32:
			if i += 4; i > end {
				err = errTruncated
			}
		case opF64:
			if i += 8; i > end {
				err = errTruncated
			}
		case opSelectT:
			var n uint32
			if n, i, err = readU32(b, i, end); err == nil {
				if int(n) > end-i {
					err = errTruncated
					break
				}
				for k := uint32(0); k < n; k++ {
					if !isValType(b[i]) {
						return at, fmt.Errorf("offset %d: select with unknown value type 0x%02x", at, b[i])
					}
					i++
				}
			}
		case opRefNull:
			if i >= end {
				err = errTruncated
			} else if c := b[i]; c != 0x70 && c != 0x6F {
				return at, fmt.Errorf("offset %d: ref.null of unknown heap type 0x%02x", at, c)
			} else {
				i++
			}
		case opPrefixFC:
			var sub uint32
			if sub, i, err = readU32(b, i, end); err == nil {
				if sub >= uint32(len(fcImmediates)) {
					return at, fmt.Errorf("offset %d: unknown opcode 0xfc %d", at, sub)
				}
				for k := uint8(0); k < fcImmediates[sub] && err == nil; k++ {
					i, err = skipLEB(b, i, end, 5)
				}
			}
		case opPrefixFD:
			// TinyGo does not emit SIMD for our modules (its wasip1 target
			// leaves simd128 off); a module that uses it is refused rather
			// than walked by an untested table.
			return at, fmt.Errorf("offset %d: SIMD instructions (0xfd prefix) are not supported", at)
		case opTailCall:
			// A cycle of tail calls repeats forever without a loop, so the
			// back-edge check would not stop it.
			return at, fmt.Errorf("offset %d: tail calls (opcode 0x%02x) are not supported: a return_call cycle has no loop to check", at, op)
		default:
			return at, fmt.Errorf("offset %d: unknown opcode 0x%02x", at, op)
		}
		if err != nil {
			return at, fmt.Errorf("offset %d: opcode 0x%02x: %w", at, op, err)
		}
	}
	return i, fmt.Errorf("offset %d: %w: no end", i, errTruncated)
}
