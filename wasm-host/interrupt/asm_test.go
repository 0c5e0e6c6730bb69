package interrupt

import (
	"bytes"
	"math"
	"testing"
)

// A few helpers to write modules byte by byte, and the hand-assembled
// module the decoder tests run: every kind of immediate the walker knows,
// nested loops, br_table, the three block type encodings.

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func u32(v int) []byte { return appendU32(nil, uint32(v)) }

// sleb encodes a signed LEB128 number.
func sleb(v int64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7F)
		v >>= 7
		if v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func str(s string) []byte { return cat(u32(len(s)), []byte(s)) }

func vec(items ...[]byte) []byte { return cat(u32(len(items)), cat(items...)) }

func section(id byte, content ...[]byte) []byte {
	c := cat(content...)
	return cat([]byte{id}, u32(len(c)), c)
}

func custom(name string, data []byte) []byte { return section(secCustom, str(name), data) }

func module(sections ...[]byte) []byte { return cat(header, cat(sections...)) }

func funcType(params, results []byte) []byte {
	return cat([]byte{0x60}, u32(len(params)), params, u32(len(results)), results)
}

// body is a function body: local declarations (count, type pairs) and
// instructions; the final end is added here.
func fbody(locals [][2]byte, code ...[]byte) []byte {
	var l [][]byte
	for _, d := range locals {
		l = append(l, []byte{d[0], d[1]})
	}
	b := cat(vec(l...), cat(code...), []byte{end})
	return cat(u32(len(b)), b)
}

func export(name string, kind byte, index int) []byte {
	return cat(str(name), []byte{kind}, u32(index))
}

// Opcodes, to keep the bodies below readable.
const (
	unreachable = 0x00
	nop         = 0x01
	block       = 0x02
	loop        = 0x03
	ifOp        = 0x04
	elseOp      = 0x05
	end         = 0x0B
	br          = 0x0C
	brIf        = 0x0D
	brTable     = 0x0E
	ret         = 0x0F
	drop        = 0x1A
	selectT     = 0x1C
	localGet    = 0x20
	localSet    = 0x21
	localTee    = 0x22
	globalGet   = 0x23
	tableGet    = 0x25
	i32Load     = 0x28
	i64Load     = 0x29
	i32Load8U   = 0x2D
	i32Store    = 0x36
	i64Store    = 0x37
	memorySize  = 0x3F
	i32Const    = 0x41
	i64Const    = 0x42
	f32Const    = 0x43
	f64Const    = 0x44
	i32Eqz      = 0x45
	i32LtU      = 0x49
	i32GtS      = 0x4A
	i32GeS      = 0x4E
	i32Add      = 0x6A
	i32Sub      = 0x6B
	i64Add      = 0x7C
	i64Mul      = 0x7E
	i32WrapI64  = 0xA7
	i64ExtI32S  = 0xAC
	i32Ext16S   = 0xC1
	i64Ext8S    = 0xC2
	refNull     = 0xD0
	refIsNull   = 0xD1
	refFunc     = 0xD2
	prefixFC    = 0xFC

	empty = 0x40
	i32   = 0x7F
	i64   = 0x7E
	f32   = 0x7D
	f64   = 0x7C
	fref  = 0x70
)

func op(b ...byte) []byte { return b }

func i32c(v int32) []byte { return cat(op(i32Const), sleb(int64(v))) }
func i64c(v int64) []byte { return cat(op(i64Const), sleb(v)) }

// multiType is the index of the (i32 i32) -> (i32 i32) type, used as a
// block type. Above 63 it takes two bytes as an s33, which the walker must
// read as a type index, not as a value type.
const multiType = 66

// The hand module's exported functions, in function index order.
var handFuncs = []string{"sum", "classify", "multi", "sat", "mem", "refs", "signext", "spin", "count", "globals"}

// handModule imports one immutable i32 global env.g (= 2), defines two
// globals and the functions of handFuncs. It carries a DWARF section and a
// name section.
func handModule() []byte {
	types := make([][]byte, 70)
	for i := range types {
		types[i] = funcType(nil, nil) // filler, so multiType needs two bytes
	}
	types[0] = funcType(op(i32), op(i64))
	types[1] = funcType(op(i32), op(i32))
	types[2] = funcType(nil, op(i32))
	types[3] = funcType(nil, op(i64))
	types[multiType] = funcType(op(i32, i32), op(i32, i32))
	funcTypes := []int{0, 1, multiType, 2, 2, 2, 3, 4, 4, 2} // type 4 is () -> ()

	// sum(n): Σ over i < n of Σ over j < i of i*j, in two nested loops.
	sum := fbody([][2]byte{{2, i32}, {1, i64}},
		op(block, empty, loop, empty),
		op(localGet, 1, localGet, 0, i32GeS, brIf, 1),
		i32c(0), op(localSet, 2),
		op(block, empty, loop, empty),
		op(localGet, 2, localGet, 1, i32GeS, brIf, 1),
		op(localGet, 3, localGet, 1, i64ExtI32S, localGet, 2, i64ExtI32S, i64Mul, i64Add, localSet, 3),
		op(localGet, 2), i32c(1), op(i32Add, localSet, 2, br, 0),
		op(end, end),
		op(localGet, 1), i32c(1), op(i32Add, localSet, 1, br, 0),
		op(end, end),
		op(localGet, 3),
	)
	// classify(x): 0 → 100, 1 → -7, above 10 → 300000, else -1; br_table,
	// a valued block, if/else with a loop inside.
	classify := fbody(nil,
		op(block, i32, block, empty, block, empty, block, empty),
		op(localGet, 0, brTable), u32(2), u32(0), u32(1), u32(2),
		op(end), i32c(100), op(br, 2),
		op(end), i32c(-7), op(br, 1),
		op(end),
		op(localGet, 0), i32c(10), op(i32GtS),
		op(ifOp, i32, loop, i32), i32c(300000), op(end, elseOp), i32c(-1), op(end),
		op(end),
	)
	// multi(a, b): (0, b + 2a), counting a down in a loop whose block type
	// is a type index with parameters.
	multi := fbody(nil,
		op(localGet, 0, localGet, 1),
		op(block), sleb(multiType), op(loop), sleb(multiType),
		op(localSet, 1, localSet, 0, localGet, 0, localGet, 1),
		op(localGet, 0, i32Eqz, brIf, 1, drop, drop),
		op(localGet, 0), i32c(1), op(i32Sub, localGet, 1), i32c(2), op(i32Add, br, 0),
		op(end, end),
	)
	f32bits := func(v float32) []byte { return cat(op(f32Const), le32(math.Float32bits(v))) }
	f64bits := func(v float64) []byte { return cat(op(f64Const), le64(math.Float64bits(v))) }
	// sat: saturating truncations (0xfc 1, 2, 7) of f32 and f64 constants.
	sat := fbody(nil,
		f64bits(1e10), op(prefixFC, 2),
		f32bits(-5.5), op(prefixFC, 1), op(i32Add),
		f64bits(3.9), op(prefixFC, 7), op(i32WrapI64, i32Sub),
	)
	// mem: memory.fill, memory.copy, loads and stores with offsets, a
	// loop summing bytes, memory.size.
	mem := fbody([][2]byte{{2, i32}},
		i32c(0), i32c(7), i32c(16), op(prefixFC, 11, 0),
		i32c(32), i32c(0), i32c(16), op(prefixFC, 10, 0, 0),
		i32c(100), i64c(-2), op(i64Store, 3, 8),
		op(loop, empty),
		op(localGet, 1, localGet, 0, i32Load8U, 0, 32, i32Add, localSet, 1),
		op(localGet, 0), i32c(1), op(i32Add, localTee, 0), i32c(16), op(i32LtU, brIf, 0),
		op(end),
		op(localGet, 1), i32c(100), op(i64Load, 3, 8, i32WrapI64, i32Add),
		op(memorySize, 0, i32Add),
	)
	// refs: ref.null, ref.is_null, ref.func, typed select, table.size,
	// table.get, return.
	refs := fbody(nil,
		op(refNull, fref, refIsNull, refFunc, 0, refIsNull, i32Add),
		i32c(5), i32c(9), i32c(0), op(selectT, 1, i32, i32Add),
		op(prefixFC, 16, 0, i32Add),
		i32c(1), op(tableGet, 0, refIsNull, i32Add),
		op(nop, ret),
	)
	// signext: i64.extend8_s(0x80) + i32.extend16_s(0x8000).
	signext := fbody(nil,
		i64c(0x80), op(i64Ext8S),
		i32c(0x8000), op(i32Ext16S, i64ExtI32S, i64Add),
	)
	// spin loops forever; count loops forever adding 1 to memory[0].
	spin := fbody(nil, op(loop, empty, br, 0, end))
	count := fbody(nil,
		op(loop, empty), i32c(0), i32c(0), op(i32Load, 2, 0), i32c(1), op(i32Add, i32Store, 2, 0, br, 0, end),
	)
	// globals: the imported global + the defined ones.
	globals := fbody(nil,
		op(globalGet, 0, globalGet, 1, i32Add, globalGet, 2, i32WrapI64, i32Add),
		op(block, empty), unreachableIfFalse(), op(end),
	)

	var fs, exports [][]byte
	for i, t := range funcTypes {
		fs = append(fs, u32(t))
		exports = append(exports, export(handFuncs[i], 0x00, i))
	}
	exports = append(exports, export("memory", 0x02, 0))
	return module(
		section(1, vec(types...)),
		section(2, vec(cat(str("env"), str("g"), op(0x03, i32, 0x00)))),
		section(3, vec(fs...)),
		section(4, vec(op(fref, 0x00, 2))),
		section(5, vec(op(0x00, 1))),
		section(6, vec(cat(op(i32, 0x00), i32c(40), op(end)), cat(op(i64, 0x01), i64c(-1), op(end)))),
		section(7, vec(exports...)),
		section(9, vec(op(0x03, 0x00, 1, 0))), // declares function 0 for ref.func
		section(10, vec(sum, classify, multi, sat, mem, refs, signext, spin, count, globals)),
		custom(".debug_info", []byte("offsets into code")),
		custom("name", cat(op(0x00), str(string(str("hand"))))),
	)
}

// unreachableIfFalse is a branch around an unreachable that never runs:
// dead code the walker must step over like any other.
func unreachableIfFalse() []byte { return op(br, 0, unreachable) }

// envModule exports the immutable global g = 2 that handModule imports.
func envModule() []byte {
	return module(
		section(6, vec(cat(op(i32, 0x00), i32c(2), op(end)))),
		section(7, vec(export("g", 0x03, 0))),
	)
}

// handWant is what each function of handModule returns, computed in Go.
func handWant() map[string][][]uint64 {
	sum := func(n int64) uint64 {
		var acc int64
		for i := int64(0); i < n; i++ {
			for j := int64(0); j < i; j++ {
				acc += i * j
			}
		}
		return uint64(acc)
	}
	i32v := func(v int32) uint64 { return uint64(uint32(v)) }
	i64v := func(v int64) uint64 { return uint64(v) }
	return map[string][][]uint64{
		// name: {args, results}, …
		"sum":      {{0}, {sum(0)}, {10}, {sum(10)}, {300}, {sum(300)}},
		"classify": {{0}, {100}, {1}, {i32v(-7)}, {5}, {i32v(-1)}, {50}, {300000}},
		"multi":    {{3, 10}, {0, 16}, {0, 4}, {0, 4}},
		"sat":      {{}, {2147483647 + 0 - 3}}, // trunc_sat_f64_s(1e10) + trunc_sat_f32_u(-5.5) - trunc_sat_f64_u(3.9)
		"mem":      {{}, {16*7 - 2 + 1}},
		"refs":     {{}, {1 + 0 + 9 + 2 + 1}},
		"signext":  {{}, {i64v(-128 - 32768)}},
		"globals":  {{}, {2 + 40 - 1}},
	}
}

func le32(v uint32) []byte { return []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)} }
func le64(v uint64) []byte { return cat(le32(uint32(v)), le32(uint32(v>>32))) }

func TestHandModuleIsValidBeforeInstrumenting(t *testing.T) {
	// The assembler itself must be right for the other tests to mean
	// anything: the module compiles and computes what Go computes.
	rt := newRuntime(t, false)
	instantiateNamed(t, rt, envModule(), "env")
	mod := instantiate(t, rt, handModule())
	checkHandResults(t, mod)
}
