package interrupt

import (
	"bytes"
	"math"
	"strconv"
	"testing"
)

// A few helpers to write modules byte by byte, and the hand-assembled
// module the decoder tests run: every kind of immediate the walker knows,
// nested loops, br_table, the three block type encodings; and every place
// a function index can be: calls, ref.func, the eight forms of element
// segment, a global's initializer, exports, the start section, the name
// section.

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
	unreachable  = 0x00
	nop          = 0x01
	block        = 0x02
	loop         = 0x03
	ifOp         = 0x04
	elseOp       = 0x05
	end          = 0x0B
	br           = 0x0C
	brIf         = 0x0D
	brTable      = 0x0E
	ret          = 0x0F
	call         = 0x10
	callIndirect = 0x11
	drop         = 0x1A
	selectT      = 0x1C
	localGet     = 0x20
	localSet     = 0x21
	localTee     = 0x22
	globalGet    = 0x23
	globalSet    = 0x24
	tableGet     = 0x25
	tableSet     = 0x26
	i32Load      = 0x28
	i64Load      = 0x29
	i32Load8U    = 0x2D
	i32Store     = 0x36
	i64Store     = 0x37
	memorySize   = 0x3F
	i32Const     = 0x41
	i64Const     = 0x42
	f32Const     = 0x43
	f64Const     = 0x44
	i32Eqz       = 0x45
	i32LtU       = 0x49
	i32GtS       = 0x4A
	i32GeS       = 0x4E
	i32GeU       = 0x4F
	i32Add       = 0x6A
	i32Sub       = 0x6B
	i32Mul       = 0x6C
	i64Add       = 0x7C
	i64Mul       = 0x7E
	i32WrapI64   = 0xA7
	i64ExtI32S   = 0xAC
	i32Ext16S    = 0xC1
	i64Ext8S     = 0xC2
	refNull      = 0xD0
	refIsNull    = 0xD1
	refFunc      = 0xD2
	prefixFC     = 0xFC

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

// The hand module's function indices. It imports one function (env.add1),
// so its defined functions start at 1; instrumented, at 2. Fillers, from
// firstFiller to lastFiller, each return 1000 + their index;
// farFunc is one of them whose index, 127, takes one LEB128 byte before
// instrumenting and two after.
const (
	add1Func    = 0
	sumFunc     = 1
	initFunc    = 14 // the start function
	firstFiller = 15
	farFunc     = 127
	lastFiller  = 130
	funcCount   = lastFiller + 1
)

// The hand module's exported functions, in function index order from 1.
var handFuncs = []string{"sum", "classify", "multi", "sat", "mem", "refs", "signext", "spin", "count", "globals", "calls", "tables", "started"}

// handGlobals: the imported env.g, then the defined ones; the budget is
// added after them.
const (
	startedGlobal = 3 // set by the start function
	funcrefGlobal = 4 // a funcref initialised by ref.func
	handGlobals   = 5
)

// Element segments of the hand module: one of each of the eight forms,
// in flag order, and where their functions land in the table.
func handElements() []byte {
	rf := func(f int) []byte { return cat(op(refFunc), u32(f), op(end)) }
	funcs := func(fs ...int) []byte {
		var v [][]byte
		for _, f := range fs {
			v = append(v, u32(f))
		}
		return vec(v...)
	}
	return vec(
		cat(u32(0), i32c(0), op(end), funcs(20, 21)),                    // active, table 0, indices: slots 0, 1
		cat(u32(1), op(0x00), funcs(22, farFunc)),                       // passive, indices: table.init to 6, 7
		cat(u32(2), u32(0), i32c(2), op(end), op(0x00), funcs(farFunc)), // active, table 0 named: slot 2
		cat(u32(3), op(0x00), funcs(sumFunc, 23)),                       // declarative, indices
		cat(u32(4), i32c(3), op(end), vec(rf(24), rf(farFunc+1))),       // active, expressions: slots 3, 4
		cat(u32(5), op(fref), vec(rf(25), op(refNull, fref, end))),      // passive, expressions: table.init to 8, 9
		cat(u32(6), u32(0), i32c(5), op(end), op(fref), vec(rf(26))),    // active, table 0 named, expressions: slot 5
		cat(u32(7), op(fref), vec(rf(27))),                              // declarative, expressions
	)
}

// handTable is what the table holds once tables() ran: the function in
// each slot, -1 for null. Slot 10 is set from the funcref global.
var handTable = []int{20, 21, farFunc, 24, farFunc + 1, 26, 22, farFunc, 25, -1, 28}

// paddedFar is farFunc as a padded five-byte LEB128, as linkers write
// relocatable indices: renumbered, it must stay five bytes.
var paddedFar = []byte{0x80 | farFunc, 0x80, 0x80, 0x80, 0x00}

// handModule imports one immutable i32 global env.g (= 2) and the function
// env.add1, defines four globals and the functions above, a table filled
// by every form of element segment, a start function. It carries a DWARF
// section and a name section with function, local and label names.
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
	// type 4 is () -> ()
	funcTypes := []int{0, 1, multiType, 2, 2, 2, 3, 4, 4, 2, 2, 2, 2, 4}

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
	// table.get of the slot tables() leaves null, return.
	refs := fbody(nil,
		op(refNull, fref, refIsNull, refFunc, sumFunc, refIsNull, i32Add),
		i32c(5), i32c(9), i32c(0), op(selectT, 1, i32, i32Add),
		op(prefixFC, 16, 0, i32Add),
		i32c(9), op(tableGet, 0, refIsNull, i32Add),
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
	// calls: add1(5) + far() + far() (the second call's index padded) +
	// sum(10), and ref.func of a declared function and of one past 127.
	calls := fbody(nil,
		i32c(5), op(call, add1Func),
		op(call, farFunc, i32Add),
		op(call), paddedFar, op(i32Add),
		i32c(10), op(call, sumFunc, i32WrapI64, i32Add),
		op(refFunc, 27, refIsNull, i32Add),
		op(refFunc), u32(farFunc+1), op(refIsNull, i32Add),
	)
	// tables: fills slots 6–9 from the passive segments and slot 10 from
	// the funcref global, then sums (slot+1) × what each slot's function
	// returns, 100000 for a null slot, calling through the table in a loop.
	tables := fbody([][2]byte{{2, i32}},
		i32c(6), i32c(0), i32c(2), op(prefixFC, 12, 1, 0),
		i32c(8), i32c(0), i32c(2), op(prefixFC, 12, 5, 0),
		i32c(10), op(globalGet, funcrefGlobal, tableSet, 0),
		op(block, empty, loop, empty),
		op(localGet, 0), i32c(int32(len(handTable))), op(i32GeU, brIf, 1),
		op(localGet, 0, tableGet, 0, refIsNull),
		op(ifOp, empty, localGet, 1), i32c(100000), op(i32Add, localSet, 1),
		op(elseOp, localGet, 1, localGet, 0, callIndirect, 2, 0),
		op(localGet, 0), i32c(1), op(i32Add, i32Mul, i32Add, localSet, 1),
		op(end),
		op(localGet, 0), i32c(1), op(i32Add, localSet, 0, br, 0),
		op(end, end),
		op(localGet, 1),
	)
	started := fbody(nil, op(globalGet, startedGlobal))
	// init, the start function, counts the started global up to 3 in a
	// loop.
	init := fbody(nil,
		op(loop, empty, globalGet, startedGlobal), i32c(1), op(i32Add, globalSet, startedGlobal),
		op(globalGet, startedGlobal), i32c(3), op(i32LtU, brIf, 0, end),
	)

	bodies := [][]byte{sum, classify, multi, sat, mem, refs, signext, spin, count, globals, calls, tables, started, init}
	for f := firstFiller; f <= lastFiller; f++ {
		funcTypes = append(funcTypes, 2)
		bodies = append(bodies, fbody(nil, i32c(int32(1000+f))))
	}
	var fs, exports [][]byte
	for _, t := range funcTypes {
		fs = append(fs, u32(t))
	}
	for i, name := range handFuncs {
		exports = append(exports, export(name, 0x00, 1+i))
	}
	exports = append(exports, export("far", 0x00, farFunc), export("memory", 0x02, 0))
	return module(
		section(1, vec(types...)),
		section(2, vec(
			cat(str("env"), str("g"), op(0x03, i32, 0x00)),
			cat(str("env"), str("add1"), op(0x00, 1)),
		)),
		section(3, vec(fs...)),
		section(4, vec(op(fref, 0x00, 16))),
		section(5, vec(op(0x00, 1))),
		section(6, vec(
			cat(op(i32, 0x00), i32c(40), op(end)),
			cat(op(i64, 0x01), i64c(-1), op(end)),
			cat(op(i32, 0x01), i32c(0), op(end)),
			cat(op(fref, 0x00, refFunc, 28, end)),
		)),
		section(7, vec(exports...)),
		section(8, u32(initFunc)),
		section(9, handElements()),
		section(10, vec(bodies...)),
		custom(".debug_info", []byte("offsets into code")),
		custom("name", handNames()),
	)
}

// funcName is the hand module's name for function f.
func funcName(f int) string {
	switch {
	case f == add1Func:
		return "env.add1"
	case f == initFunc:
		return "init"
	case f >= firstFiller:
		return "f" + strconv.Itoa(f)
	}
	return handFuncs[f-1]
}

// handNames is the name section: the module's name, every function's, the
// locals of sum and label names for it.
func handNames() []byte {
	var names [][]byte
	for f := range funcCount {
		names = append(names, cat(u32(f), str(funcName(f))))
	}
	sub := func(id byte, content []byte) []byte { return cat(op(id), u32(len(content)), content) }
	return cat(
		sub(0, str("hand")),
		sub(1, vec(names...)),
		sub(2, vec(cat(u32(sumFunc), vec(cat(u32(0), str("n")), cat(u32(1), str("i")))))),
		sub(3, vec(cat(u32(sumFunc), vec(cat(u32(0), str("outer")))))),
	)
}

// unreachableIfFalse is a branch around an unreachable that never runs:
// dead code the walker must step over like any other.
func unreachableIfFalse() []byte { return op(br, 0, unreachable) }

// envModule exports the immutable global g = 2 and add1(x) = x + 1, which
// handModule imports.
func envModule() []byte {
	return module(
		section(1, vec(funcType(op(i32), op(i32)))),
		section(3, vec(u32(0))),
		section(6, vec(cat(op(i32, 0x00), i32c(2), op(end)))),
		section(7, vec(export("g", 0x03, 0), export("add1", 0x00, 0))),
		section(10, vec(fbody(nil, op(localGet, 0), i32c(1), op(i32Add)))),
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
	tables := 0
	for slot, f := range handTable {
		if f < 0 {
			tables += 100000
		} else {
			tables += (slot + 1) * (1000 + f)
		}
	}
	return map[string][][]uint64{
		// name: {args, results}, …
		"sum":      {{0}, {sum(0)}, {10}, {sum(10)}, {300}, {sum(300)}},
		"classify": {{0}, {100}, {1}, {i32v(-7)}, {5}, {i32v(-1)}, {50}, {300000}},
		"multi":    {{3, 10}, {0, 16}, {0, 4}, {0, 4}},
		"sat":      {{}, {2147483647 + 0 - 3}}, // trunc_sat_f64_s(1e10) + trunc_sat_f32_u(-5.5) - trunc_sat_f64_u(3.9)
		"mem":      {{}, {16*7 - 2 + 1}},
		"refs":     {{}, {1 + 0 + 9 + 16 + 1}},
		"signext":  {{}, {i64v(-128 - 32768)}},
		"globals":  {{}, {2 + 40 - 1}},
		"calls":    {{}, {6 + 2*(1000+farFunc) + uint64(uint32(sum(10)))}},
		"tables":   {{}, {uint64(tables)}},
		"started":  {{}, {3}},
		"far":      {{}, {1000 + farFunc}},
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
